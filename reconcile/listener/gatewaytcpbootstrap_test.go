package listener

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGatewayTCPBootstrap (issues 51, 52): on a TCPRoute class of four
// sections, the three replicas of a StatefulSet take sections 0, 1 and 2
// and the bootstrap Listener their pods share the last, 3; all are Ready.
// The bootstrap is no replica (not replica 0, whose section it would
// hold), and does not sit on replica 0's section when it is made and
// reconciled before the StatefulSet's pods and Listeners exist.
func TestGatewayTCPBootstrap(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	for _, bootstrapFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("bootstrap first %v", bootstrapFirst), func(t *testing.T) {
			ns := e.Namespace(t, ctx, "kafka-")
			class, gwNS := tcpFixture(t, ctx, e, 4)
			if bootstrapFirst {
				kafkaBootstrap(t, c, ns, class.Name, reconciletest.Port("kafka", 9092))
				tcpRouteOf(t, c, ns, "kafka-bootstrap", "tcp-3")
			}
			kafkaReplicas(t, c, ns, func(claim string) *v1alpha1.Listener { return tcpReplica(t, c, ns, claim, class.Name) })
			if !bootstrapFirst {
				for i := range 3 {
					tcpRouteOf(t, c, ns, fmt.Sprintf("data-kafka-%d", i), fmt.Sprintf("tcp-%d", i))
				}
				kafkaBootstrap(t, c, ns, class.Name, reconciletest.Port("kafka", 9092))
			}
			for i, name := range []string{"data-kafka-0", "data-kafka-1", "data-kafka-2", "kafka-bootstrap"} {
				section := fmt.Sprintf("tcp-%d", i)
				rt := tcpRouteOf(t, c, ns, name, section)
				checkTCPRoute(t, rt, name, gwNS)
				setTCPRouteStatus(t, c, rt, gwNS, section, "Accepted", metav1.ConditionTrue)
				tcpPublished(t, c, ns, name, int32(19000+i))
			}
		})
	}
}
