package gateway

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func classOf(sections ...string) *v1alpha1.ListenerClass {
	c := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "gw"}, Spec: v1alpha1.ListenerClassSpec{Gateway: &v1alpha1.ListenerGateway{}}}
	for _, s := range sections { // namespace/name/section
		parts := strings.Split(s, "/")
		c.Spec.Gateway.ParentRefs = append(c.Spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Namespace: parts[0], Name: parts[1], SectionName: parts[2]})
	}
	return c
}

func listenerOf(ports ...string) *v1alpha1.Listener {
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "broker-0"}}
	for i, p := range ports {
		l.Spec.Ports = append(l.Spec.Ports, v1alpha1.ListenerPort{Name: p, Port: int32(9093 + i)})
	}
	return l
}

// TestBindings: which Gateway listeners each Listener port goes through,
// the route's name, and the refusal of a port without a section.
func TestBindings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		class   *v1alpha1.ListenerClass
		ports   []string
		want    map[string]string // route name -> section
		wantErr string
	}{
		{"one section, one port of any name", classOf("gw/shared/tls"), []string{"kafka"}, map[string]string{"broker-0.kafka": "tls"}, ""},
		{"one section on two Gateways", classOf("gw/a/tls", "gw/b/tls"), []string{"kafka"}, map[string]string{"broker-0.kafka": "tls"}, ""},
		{"one section, two ports", classOf("gw/shared/tls"), []string{"tls", "admin"}, nil, `none is named "admin"`},
		{"two sections, ports by name", classOf("gw/shared/tls", "gw/shared/admin"), []string{"tls", "admin"}, map[string]string{"broker-0.tls": "tls", "broker-0.admin": "admin"}, ""},
		{"two sections, one port named after neither", classOf("gw/shared/tls", "gw/shared/admin"), []string{"kafka"}, nil, `ListenerClass gw routes ports through the Gateway listeners (sections) "tls" (Gateway gw/shared), "admin" (Gateway gw/shared), and none is named "kafka"`},
		{"two sections, one port named after one", classOf("gw/shared/tls", "gw/shared/admin"), []string{"admin"}, map[string]string{"broker-0.admin": "admin"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, errs := Bindings(tc.class, listenerOf(tc.ports...))
			if tc.wantErr != "" {
				if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) {
					t.Fatalf("errors %v, want %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got := map[string]string{}
			for _, b := range bs {
				got[b.RouteName] = b.Parents[0].SectionName
				for _, p := range b.Parents {
					if p.SectionName != b.Parents[0].SectionName {
						t.Errorf("binding %s mixes sections: %+v", b.RouteName, b.Parents)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("routes %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("route %s through %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestCheckSection: what a Gateway listener must be for a gateway class.
func TestCheckSection(t *testing.T) {
	pass := &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "shared"}, Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{
		{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType, TLS: pass, Hostname: ptr.To(gwv1.Hostname("*.gw.test"))},
		{Name: "terminate", Port: 8443, Protocol: gwv1.TLSProtocolType},
		{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType},
		{Name: "http-only", Port: 9444, Protocol: gwv1.TLSProtocolType, TLS: pass, AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}}}},
		{Name: "tls-kinds", Port: 9445, Protocol: gwv1.TLSProtocolType, TLS: pass, AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TLSRoute"}}}},
	}}}
	for _, tc := range []struct{ section, want string }{
		{"tls", ""},
		{"tls-kinds", ""},
		{"terminate", `listener "terminate" of Gateway gw/shared has tls.mode Terminate, and a gateway class needs Passthrough`},
		{"http", `has protocol HTTP`},
		{"http-only", `does not admit TLSRoutes`},
		{"none", `Gateway gw/shared has no listener named "none" (it has "tls", "terminate", "http", "http-only", "tls-kinds")`},
	} {
		s, problem := CheckSection(gw, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: tc.section})
		if (tc.want == "") != (problem == "") || !strings.Contains(problem, tc.want) {
			t.Errorf("%s: problem %q, want %q", tc.section, problem, tc.want)
		}
		if tc.section == "tls" && (s.Port != 9443 || s.Hostname != "*.gw.test") {
			t.Errorf("section %+v", s)
		}
	}
}

func TestHostnameMatches(t *testing.T) {
	for _, tc := range []struct {
		listener, host string
		want           bool
	}{
		{"", "a.b", true},
		{"*.gw.test", "broker-0.kafka.gw.test", true},
		{"*.gw.test", "gw.test", false},
		{"*.gw.test", "evilgw.test", false},
		{"broker.gw.test", "BROKER.gw.test", true},
		{"broker.gw.test", "other.gw.test", false},
	} {
		if got := HostnameMatches(tc.listener, tc.host); got != tc.want {
			t.Errorf("HostnameMatches(%q, %q) = %v, want %v", tc.listener, tc.host, got, tc.want)
		}
	}
}

// TestAttached: a route is attached by a parent only with Accepted and
// ResolvedRefs True for its current generation, under that parent's ref.
func TestAttached(t *testing.T) {
	p := v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: "tls"}
	cond := func(typ string, s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, ObservedGeneration: gen}
	}
	route := func(ref gwv1.ParentReference, conds ...metav1.Condition) *gwv1.TLSRoute {
		r := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Generation: 2}}
		r.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: ref, Conditions: conds}}
		return r
	}
	ref := gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "shared", SectionName: ptr.To(gwv1.SectionName("tls"))}
	other := gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "shared", SectionName: ptr.To(gwv1.SectionName("admin"))}
	acc, res := cond("Accepted", "True", "Accepted", 2), cond("ResolvedRefs", "True", "ResolvedRefs", 2)
	for _, tc := range []struct {
		name       string
		r          *gwv1.TLSRoute
		attached   bool
		wantReason string
	}{
		{"accepted and resolved", route(ref, acc, res), true, ""},
		{"the defaults spelled out", route(ParentReference(p), acc, res), true, ""},
		{"another section's status", route(other, acc, res), false, ""},
		{"accepted only", route(ref, acc), false, ""},
		{"a backend missing", route(ref, acc, cond("ResolvedRefs", "False", "BackendNotFound", 2)), false, "BackendNotFound"},
		{"the namespace not admitted", route(ref, cond("Accepted", "False", "NotAllowedByListeners", 2), res), false, "NotAllowedByListeners"},
		{"an older generation", route(ref, cond("Accepted", "True", "Accepted", 1), cond("ResolvedRefs", "True", "ResolvedRefs", 1)), false, ""},
	} {
		a := Attached(tc.r, p)
		if a.Attached != tc.attached || a.Reason != tc.wantReason {
			t.Errorf("%s: %+v, want attached %v reason %q", tc.name, a, tc.attached, tc.wantReason)
		}
	}
}

// TestRouteIsExposure: a route carries the operator's labels and owner,
// and nothing of the Listener's metadata.
func TestRouteIsExposure(t *testing.T) {
	l := listenerOf("kafka")
	l.Labels = map[string]string{"team": "a", LabelManagedBy: "someone-else"}
	l.Annotations = map[string]string{"note": "x"}
	bs, _ := Bindings(classOf("gw/shared/tls"), l)
	r := Route(l, bs[0], "broker-0.kafka.gw.test", "broker-0")
	if len(r.Labels) != 2 || r.Labels[LabelManagedBy] != LabelManagedByValue || r.Labels[v1alpha1.LabelRouteListener] != "broker-0" || len(r.Annotations) != 0 {
		t.Errorf("labels %v annotations %v", r.Labels, r.Annotations)
	}
	if owner, ok := MadeFor(r); !ok || owner != "broker-0" {
		t.Errorf("MadeFor = %q %v", owner, ok)
	}
	if *r.Spec.Rules[0].BackendRefs[0].Port != 9093 || r.Spec.Rules[0].BackendRefs[0].Name != "broker-0" {
		t.Errorf("backend %+v", r.Spec.Rules[0].BackendRefs[0])
	}
}
