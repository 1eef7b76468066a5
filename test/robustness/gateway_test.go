package robustness

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// testGatewayEnv are the ports of Traefik's entry points in the tables.
var testGatewayEnv = GatewayEnv{Ports: [2]int{9443, 9444}, TCPPorts: [tcpSections]int{9450, 9451, 9452, 9453}}

// gatewayWorld is world() with class slot 0 a gateway class through
// section p0 of Gateway g0, each tenant's Listener "web" with the route the
// operator makes, which Traefik attached; change edits it.
func gatewayWorld(t *testing.T, change func(s *Snapshot)) *Snapshot {
	class := Op{Kind: PutClass, Type: v1alpha1.ServiceTypeClusterIP, Template: 1, Parents: []string{"g0/p0"}}
	s := world(class, nil)
	s.World.Gateway = true
	gw := s.World.GatewayFor(Op{Kind: PutGateway, Sections: []string{"p0:All"}}, testGatewayEnv)
	s.Gateways = map[string]*gwv1.Gateway{gw.Name: gw}
	c := s.Classes[s.World.ClassName(0)]
	for tn := range s.Listeners {
		l := &s.Listeners[tn][0]
		bindings, errs := gateway.Bindings(c, l)
		if len(errs) > 0 || len(bindings) != 1 {
			t.Fatalf("bindings %v, %v", bindings, errs)
		}
		r := gateway.Route(l, bindings[0], hostname(c, l), "web")
		for _, p := range r.Spec.ParentRefs {
			r.Status.Parents = append(r.Status.Parents, gwv1.RouteParentStatus{ParentRef: p, ControllerName: "traefik.io/gateway-controller", Conditions: []metav1.Condition{
				{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted"},
				{Type: string(gwv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
			}})
		}
		s.Routes[tn] = []gwv1.TLSRoute{*r}
	}
	if change != nil {
		change(s)
	}
	return s
}

// TestGatewayInvariantsFindBreaches: each gateway invariant holds on a
// world as the operator and Traefik should leave it and reports each
// breach it is there for.
func TestGatewayInvariantsFindBreaches(t *testing.T) {
	tests := []struct {
		name   string
		inv    func(Step) []string
		change func(s *Snapshot)
		want   string
	}{
		{name: "routes as they should be", inv: RoutesFollowTheirClass},
		{name: "sections as they should be", inv: RoutesPublishedOnce},
		{name: "Ready as it should be", inv: GatewayRefusalsSaid},
		{name: "a TLSRoute left on a TCPRoute class", inv: RoutesFollowTheirClass, change: func(s *Snapshot) {
			s.Classes[s.World.ClassName(0)].Spec.Gateway.RouteKind = v1alpha1.RouteKindTCPRoute
		}, want: "the class makes TCPRoutes"},
		{name: "a tenant's annotation on a route", inv: RoutesFollowTheirClass, change: func(s *Snapshot) {
			s.Routes[0][0].Annotations = map[string]string{"team": "a"}
		}, want: "has annotations"},
		{name: "a tenant's label on a route", inv: RoutesFollowTheirClass, change: func(s *Snapshot) { s.Routes[0][0].Labels["team"] = "a" }, want: "has labels"},
		{name: "another hostname", inv: RoutesFollowTheirClass, change: func(s *Snapshot) { s.Routes[1][0].Spec.Hostnames = []gwv1.Hostname{"x.robust.test"} }, want: "routes hostnames"},
		{name: "a parent the class does not name", inv: RoutesFollowTheirClass, change: func(s *Snapshot) {
			s.Routes[0][0].Spec.ParentRefs[0].Name = "g1"
		}, want: "which the class does not name"},
		{name: "a route of a class without a gateway", inv: RoutesFollowTheirClass, change: func(s *Snapshot) {
			s.Classes[s.World.ClassName(0)].Spec.Gateway = nil
		}, want: "routes through no Gateway"},
		{name: "two Listeners, one section and hostname", inv: RoutesPublishedOnce, change: func(s *Snapshot) {
			s.Routes[1][0].Spec.Hostnames = s.Routes[0][0].Spec.Hostnames
		}, want: "both route"},
		{name: "Ready though Traefik refused", inv: GatewayRefusalsSaid, change: func(s *Snapshot) {
			s.Routes[1][0].Status.Parents[0].Conditions[0] = metav1.Condition{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners"}
		}, want: "NotAllowedByListeners"},
		{name: "Ready though the Gateway is gone", inv: GatewayRefusalsSaid, change: func(s *Snapshot) { s.Gateways = nil }, want: "does not exist"},
		{name: "Ready without a route", inv: GatewayRefusalsSaid, change: func(s *Snapshot) { s.Routes[0] = nil }, want: "has no route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBreach(t, tt.inv(Step{Prev: gatewayWorld(t, nil), Cur: gatewayWorld(t, tt.change)}), tt.want)
		})
	}
}
