package listener

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// kafkaReplicas makes the three replicas of StatefulSet kafka in ns: for
// replica i, claim data-kafka-i and its own Listener (own makes both, the
// Listener not yet created), and pod kafka-i, labelled as the StatefulSet
// controller labels it, mounting that claim and the bootstrap's claim
// kafka-bootstrap, which the three pods share.
func kafkaReplicas(t *testing.T, c client.Client, ns string, own func(claim string) *v1alpha1.Listener) {
	t.Helper()
	for i := range 3 {
		claim, pod := fmt.Sprintf("data-kafka-%d", i), fmt.Sprintf("kafka-%d", i)
		testenv.Create(t, t.Context(), c, own(claim))
		p := reconciletest.PodWithPorts(ns, pod, claim)
		p.Labels = map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelStatefulSetPodName: pod}
		p.Spec.Volumes = append(p.Spec.Volumes, reconciletest.ClaimVolume("bootstrap", "kafka-bootstrap"))
		testenv.Create(t, t.Context(), c, p)
	}
}

// kafkaBootstrap creates Listener kafka-bootstrap of class with ports,
// and the claim kafka-bootstrap that names it (the one kafka's pods mount).
func kafkaBootstrap(t *testing.T, c client.Client, ns, class string, ports ...v1alpha1.ListenerPort) {
	t.Helper()
	testenv.Create(t, t.Context(), c, reconciletest.Listener(ns, "kafka-bootstrap", class, ports...),
		reconciletest.ListenerClaim(ns, "kafka-bootstrap", map[string]string{v1alpha1.AnnotationListenerName: "kafka-bootstrap"}))
}

// TestNodePortRangeBootstrap (issues 51, 52): on a node-port range class,
// replica i of a StatefulSet gets from + i×n + j for its port j, and the
// bootstrap Listener its pods share the last free block, clear of the
// replicas' ports, whether it is made before the StatefulSet (n = 2) or
// after its pods (n = 1). The ranges are in the API server's static band
// (30000-30085), where no other test's range is.
func TestNodePortRangeBootstrap(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	for _, tc := range []struct {
		name           string
		rng            v1alpha1.NodePortRange
		ports          []v1alpha1.ListenerPort
		bootstrapFirst bool
		bootstrap      map[string]int32
	}{
		{"bootstrap first, two ports", v1alpha1.NodePortRange{From: 30000, To: 30009},
			[]v1alpha1.ListenerPort{reconciletest.Port("a", 9092), reconciletest.Port("b", 9093)}, true, map[string]int32{"a": 30008, "b": 30009}},
		{"pods first, one port", v1alpha1.NodePortRange{From: 30072, To: 30076},
			[]v1alpha1.ListenerPort{reconciletest.Port("a", 9092)}, false, map[string]int32{"a": 30076}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := e.Namespace(t, ctx, "kafka-")
			class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &tc.rng})
			if tc.bootstrapFirst {
				kafkaBootstrap(t, c, ns, class.Name, tc.ports...)
				nodePortsAre(t, c, ns, "kafka-bootstrap", tc.bootstrap)
			}
			kafkaReplicas(t, c, ns, func(claim string) *v1alpha1.Listener {
				l := replicaListener(t, c, ns, claim, class.Name)
				l.Spec.Ports = tc.ports
				return l
			})
			n := int32(len(tc.ports))
			for i := range int32(3) {
				want := map[string]int32{}
				for j, p := range tc.ports {
					want[p.Name] = tc.rng.From + i*n + int32(j)
				}
				nodePortsAre(t, c, ns, fmt.Sprintf("data-kafka-%d", i), want)
			}
			if !tc.bootstrapFirst {
				kafkaBootstrap(t, c, ns, class.Name, tc.ports...)
			}
			nodePortsAre(t, c, ns, "kafka-bootstrap", tc.bootstrap)
		})
	}
}
