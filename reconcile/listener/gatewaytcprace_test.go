package listener

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGatewayTCPRaceLoserLetsGo (issue 49, found by make robustness): two
// Listeners of a TCPRoute class that pick one free section at once (each
// reconciled before the cache has the other's route) both write a route
// there. The one that then finds it held (a replica: GatewaySectionTaken;
// a non-replica with no other free block: GatewaySectionsExhausted) must
// delete its route, or two routes stay attached to one section. The race
// is played by writing the loser's route by hand, as it would have.
// (After gateway_test.go: it installs the Gateway API.)
func TestGatewayTCPRaceLoserLetsGo(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	for _, replicaFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("replica first %v", replicaFirst), func(t *testing.T) {
			ns := e.Namespace(t, ctx, "kafka-")
			class, gwNS := tcpFixture(t, ctx, e, 1)
			replica := tcpReplica(t, c, ns, "data-kafka-0", class.Name)
			bootstrap := reconciletest.Listener(ns, "kafka-bootstrap", class.Name, reconciletest.Port("kafka", 9092))
			winner, loser, reason := bootstrap, replica, v1alpha1.ReasonGatewaySectionTaken
			if replicaFirst {
				winner, loser, reason = replica, bootstrap, v1alpha1.ReasonGatewaySectionsExhausted
			}
			testenv.Create(t, ctx, c, winner)
			rt := tcpRouteOf(t, c, ns, winner.Name, "tcp-0")
			setTCPRouteStatus(t, c, rt, gwNS, "tcp-0", "Accepted", metav1.ConditionTrue)
			tcpPublished(t, c, ns, winner.Name, 19000)
			testenv.Create(t, ctx, c, loser)
			reconciletest.WaitStatus(t, ctx, c, ns, loser.Name, func(l *v1alpha1.Listener) error {
				if r, _ := reconciletest.ReadyReason(l); r != reason {
					return fmt.Errorf("Ready reason %q, want %s", r, reason)
				}
				return nil
			})
			// The loser's route, as the race left it: on the section, made
			// after the winner's (creation times have whole seconds; in the
			// same second the names decide).
			time.Sleep(time.Until(rt.CreationTimestamp.Add(time.Second)))
			b := gateway.TCPBinding{Port: loser.Spec.Ports[0], Parent: class.Spec.Gateway.ParentRefs[0], RouteName: names.RouteName(loser.Name, "kafka")}
			lost := gateway.TCPRoute(loser, b, names.ServiceName(loser.Name))
			testenv.Create(t, ctx, c, lost)
			testenv.Converges(t, "the loser's route deleted", func() error {
				err := c.Get(ctx, client.ObjectKeyFromObject(lost), lost)
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("route %s still there (%v)", lost.Name, err)
			})
			checkTCPRoute(t, tcpRouteOf(t, c, ns, winner.Name, "tcp-0"), winner.Name, gwNS)
			tcpPublished(t, c, ns, winner.Name, 19000)
		})
	}
}
