package robustness

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// tcpWorld is world() with class slot 0 a TCPRoute class of sections t0
// and t1 of Gateway g0 (address 127.0.0.1): tenant a's Listener "web" is
// replica 1 of a StatefulSet and holds t1, tenant b's is no replica's and
// holds t0, each with the route the operator makes, which Traefik
// attached, and publishing what it should; change edits it.
func tcpWorld(t *testing.T, change func(s *Snapshot)) *Snapshot {
	class := Op{Kind: PutClass, Type: v1alpha1.ServiceTypeClusterIP, Parents: []string{"g0/t0", "g0/t1"}, TCP: true}
	s := world(class, nil)
	s.World.Gateway = true
	gw := s.World.GatewayFor(Op{Kind: PutGateway, Sections: []string{"p0:All", "t0:All", "t1:All"}}, testGatewayEnv)
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: "127.0.0.1"}}
	s.Gateways = map[string]*gwv1.Gateway{gw.Name: gw}
	c := s.Classes[s.World.ClassName(0)]
	s.Listeners[0][0].Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: "kafka-1"}
	for tn, entry := range []int{1, 0} {
		l := &s.Listeners[tn][0]
		b := gateway.TCPBinding{Port: l.Spec.Ports[0], Index: entry, Parent: c.Spec.Gateway.ParentRefs[entry], RouteName: names.RouteName(l.Name, "p0")}
		r := gateway.TCPRoute(l, b, "web")
		r.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: r.Spec.ParentRefs[0], ControllerName: "traefik.io/gateway-controller", Conditions: []metav1.Condition{
			{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted"},
			{Type: string(gwv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
		}}}
		s.TCPRoutes[tn] = []gwv1.TCPRoute{*r}
		l.Status.IngressAddresses = []v1alpha1.ListenerIngress{{Address: "127.0.0.1", AddressType: v1alpha1.AddressTypeIP,
			Ports: map[string]int32{"p0": int32(testGatewayEnv.TCPPorts[entry])}}}
	}
	if change != nil {
		change(s)
	}
	return s
}

// notReady makes Listener l not Ready for reason.
func notReady(l *v1alpha1.Listener, reason string) {
	l.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: "m"}}
}

// TestTCPInvariantsFindBreaches: each invariant of TCPRoute classes holds
// on a world as the operator and Traefik should leave it and reports each
// breach it is there for.
func TestTCPInvariantsFindBreaches(t *testing.T) {
	refused := metav1.Condition{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners"}
	tests := []struct {
		name   string
		inv    func(Step) []string
		change func(s *Snapshot)
		want   string
	}{
		{name: "routes as they should be", inv: TCPRoutesFollowTheirClass},
		{name: "sections as they should be", inv: TCPSectionsPublishedOnce},
		{name: "replicas as they should be", inv: ReplicasHoldTheirSections},
		{name: "Ready as it should be", inv: TCPRefusalsSaid},
		{name: "addresses as they should be", inv: TCPListenersToldGatewayAddress},
		{name: "the TLSRoute invariants leave TCPRoute classes alone", inv: GatewayRefusalsSaid},
		{name: "a tenant's label on a route", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) { s.TCPRoutes[0][0].Labels["team"] = "a" }, want: "has labels"},
		{name: "a tenant's annotation on a route", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) {
			s.TCPRoutes[1][0].Annotations = map[string]string{"team": "a"}
		}, want: "has annotations"},
		{name: "a section the class does not name", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) {
			s.TCPRoutes[0][0].Spec.ParentRefs[0].SectionName = ptr.To(gwv1.SectionName("t3"))
		}, want: "want one section of the class's block"},
		{name: "two parents", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) {
			s.TCPRoutes[0][0].Spec.ParentRefs = append(s.TCPRoutes[0][0].Spec.ParentRefs, s.TCPRoutes[1][0].Spec.ParentRefs...)
		}, want: "want one section of the class's block"},
		{name: "another backend", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) {
			s.TCPRoutes[0][0].Spec.Rules[0].BackendRefs[0].Name = "other"
		}, want: "not to the Listener's Service"},
		{name: "a TCPRoute left on a TLSRoute class", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) {
			s.Classes[s.World.ClassName(0)].Spec.Gateway.RouteKind = v1alpha1.RouteKindTLSRoute
		}, want: "the class makes TLSRoutes"},
		{name: "a TCPRoute left without a class", inv: TCPRoutesFollowTheirClass, change: func(s *Snapshot) { s.Listeners[1][0].Spec.ClassName = nil }, want: "names no class"},
		{name: "two Listeners told one section", inv: TCPSectionsPublishedOnce, change: func(s *Snapshot) {
			s.Listeners[1][0].Status.IngressAddresses = s.Listeners[0][0].Status.IngressAddresses
		}, want: "both publish 127.0.0.1:9451"},
		{name: "two routes attached to one section", inv: TCPSectionsPublishedOnce, change: func(s *Snapshot) {
			s.TCPRoutes[1][0].Spec.ParentRefs = s.TCPRoutes[0][0].Spec.ParentRefs
			s.TCPRoutes[1][0].Status.Parents = s.TCPRoutes[0][0].Status.Parents
		}, want: "have a TCPRoute attached to section"},
		{name: "a replica on another's entry", inv: ReplicasHoldTheirSections, change: func(s *Snapshot) {
			s.Listeners[0][0].Annotations[v1alpha1.AnnotationStatefulSetPod] = "kafka-0"
		}, want: "not routed (alone) through entry 0"},
		{name: "a replica Ready past the block", inv: ReplicasHoldTheirSections, change: func(s *Snapshot) {
			s.Listeners[0][0].Annotations[v1alpha1.AnnotationStatefulSetPod] = "kafka-2"
		}, want: "lie past the class's parentRefs"},
		{name: "exhausted though the entries are there", inv: ReplicasHoldTheirSections, change: func(s *Snapshot) {
			notReady(&s.Listeners[0][0], v1alpha1.ReasonGatewaySectionsExhausted)
		}, want: "says GatewaySectionsExhausted"},
		{name: "Ready though Traefik refused", inv: TCPRefusalsSaid, change: func(s *Snapshot) {
			s.TCPRoutes[1][0].Status.Parents[0].Conditions[0] = refused
		}, want: "NotAllowedByListeners"},
		{name: "Ready without a route", inv: TCPRefusalsSaid, change: func(s *Snapshot) { s.TCPRoutes[0] = nil }, want: "has no TCPRoute of its own"},
		{name: "Ready though the Gateway is gone", inv: TCPRefusalsSaid, change: func(s *Snapshot) { s.Gateways = nil }, want: "does not exist"},
		{name: "taken though nobody holds it", inv: TCPRefusalsSaid, change: func(s *Snapshot) {
			notReady(&s.Listeners[0][0], v1alpha1.ReasonGatewaySectionTaken)
			s.TCPRoutes[1][0].Status.Parents[0].Conditions[0] = refused // a refused route holds nothing
		}, want: "no other route holds"},
		{name: "another port published", inv: TCPListenersToldGatewayAddress, change: func(s *Snapshot) {
			s.Listeners[0][0].Status.IngressAddresses[0].Ports["p0"] = 9450
		}, want: "publishes"},
		{name: "Ready though the Gateway has no address", inv: TCPListenersToldGatewayAddress, change: func(s *Snapshot) {
			s.Gateways["g0"].Status.Addresses = nil
		}, want: "has no address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBreach(t, tt.inv(Step{Prev: tcpWorld(t, nil), Cur: tcpWorld(t, tt.change)}), tt.want)
		})
	}
}

// TestTCPClassesOnlyWithGateway: the generator makes TCPRoute classes and
// Gateways with TCP sections when Traefik runs, and a history without it
// is as it was (make test's fixed seeds do not change).
func TestTCPClassesOnlyWithGateway(t *testing.T) {
	tcp, sections := 0, 0
	for seed := range uint64(20) {
		for _, op := range GenerateWith(seed, 40, true) {
			if op.TCP {
				tcp++
			}
			for _, s := range op.Sections {
				if _, ok := tcpSectionIndex(s[:2]); ok {
					sections++
				}
			}
		}
		for _, op := range Generate(seed, 40) {
			if op.TCP || op.Kind == PutGateway {
				t.Fatalf("seed %d without Traefik: %#v", seed, op)
			}
		}
	}
	if tcp == 0 || sections == 0 {
		t.Fatalf("20 histories with Traefik made %d TCPRoute classes and %d TCP sections", tcp, sections)
	}
}
