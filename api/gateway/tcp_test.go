package gateway

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// tcpClass is a TCPRoute class with sections tcp-0 … tcp-<n-1> of Gateway
// gw/shared.
func tcpClass(n int) *v1alpha1.ListenerClass {
	c := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "tcp"}, Spec: v1alpha1.ListenerClassSpec{Gateway: &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute}}}
	for i := range n {
		c.Spec.Gateway.ParentRefs = append(c.Spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: fmt.Sprintf("tcp-%d", i)})
	}
	return c
}

// TestTCPSections: which entry of its class's block each port of a
// Listener is routed through.
func TestTCPSections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sections int
		ports    []string
		replica  int
		own      map[string]int
		held     []int
		want     map[string]int // port -> entry
		wantErr  string
	}{
		{"replica 0, one port", 3, []string{"kafka"}, 0, nil, nil, map[string]int{"kafka": 0}, ""},
		{"replica 2, one port", 3, []string{"kafka"}, 2, nil, nil, map[string]int{"kafka": 2}, ""},
		{"replica 1, two ports", 6, []string{"kafka", "admin"}, 1, nil, nil, map[string]int{"kafka": 2, "admin": 3}, ""},
		{"a replica ignores what others hold elsewhere", 4, []string{"kafka"}, 3, nil, []int{0, 1, 2}, map[string]int{"kafka": 3}, ""},
		{"a replica past the list", 3, []string{"kafka"}, 3, nil, nil, nil, "ListenerClass tcp has 3 section(s)"},
		{"a replica whose block ends past the list", 5, []string{"kafka", "admin"}, 2, nil, nil, nil, "replica 2 with 2 port(s), takes entries 4 to 5"},
		{"a replica's section taken", 3, []string{"kafka"}, 1, nil, []int{1}, nil, `section "tcp-1" of Gateway gw/shared (entry 1 of ListenerClass tcp's spec.gateway.parentRefs), which port "kafka" of this Listener is routed through, is held by another TCPRoute`},
		{"a replica's second port taken", 4, []string{"kafka", "admin"}, 1, nil, []int{3}, map[string]int{"kafka": 2}, `section "tcp-3"`},
		{"not a replica: the first free", 4, []string{"kafka"}, -1, nil, []int{0, 1}, map[string]int{"kafka": 2}, ""},
		{"not a replica: a hole", 4, []string{"kafka"}, -1, nil, []int{0, 2}, map[string]int{"kafka": 1}, ""},
		{"not a replica: the first free aligned block", 6, []string{"kafka", "admin"}, -1, nil, []int{1, 4}, map[string]int{"kafka": 2, "admin": 3}, ""},
		{"not a replica: keeps its own", 4, []string{"kafka"}, -1, map[string]int{"kafka": 3}, []int{1}, map[string]int{"kafka": 3}, ""},
		{"not a replica: its own held moves it", 4, []string{"kafka"}, -1, map[string]int{"kafka": 3}, []int{3}, map[string]int{"kafka": 0}, ""},
		{"not a replica: its own past a shrunk list", 2, []string{"kafka"}, -1, map[string]int{"kafka": 3}, nil, map[string]int{"kafka": 0}, ""},
		{"not a replica: exhausted", 3, []string{"kafka"}, -1, nil, []int{0, 1, 2}, nil, "no block of 1 free section(s) is left for this Listener; ask an administrator to add sections"},
		{"not a replica: no whole block", 4, []string{"kafka", "admin"}, -1, nil, []int{0, 3}, nil, "no block of 2 free section(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "broker"}}
			for i, p := range tc.ports {
				l.Spec.Ports = append(l.Spec.Ports, v1alpha1.ListenerPort{Name: p, Port: int32(9092 + i)})
			}
			held := map[int]bool{}
			for _, i := range tc.held {
				held[i] = true
			}
			bs, err := TCPSections(tcpClass(tc.sections), l, tc.replica, tc.own, held)
			if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			var exhausted *SectionsExhausted
			var taken *SectionTaken
			if err != nil && !errors.As(err, &exhausted) && !errors.As(err, &taken) {
				t.Errorf("error %T, want *SectionsExhausted or *SectionTaken", err)
			}
			got := map[string]int{}
			for _, b := range bs {
				got[b.Port.Name] = b.Index
				if b.Parent.SectionName != fmt.Sprintf("tcp-%d", b.Index) || b.RouteName != "broker."+b.Port.Name {
					t.Errorf("binding %+v", b)
				}
			}
			if len(got) != len(tc.want) || len(tc.want) > 0 && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCheckTCPSection: what a Gateway listener must be for a TCPRoute
// class.
func TestCheckTCPSection(t *testing.T) {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "shared"}, Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{
		{Name: "tcp-0", Port: 19000, Protocol: gwv1.TCPProtocolType},
		{Name: "tcp-kinds", Port: 19001, Protocol: gwv1.TCPProtocolType, AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TCPRoute"}}}},
		{Name: "tls-only", Port: 19002, Protocol: gwv1.TCPProtocolType, AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TLSRoute"}}}},
		{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType},
	}}}
	for _, tc := range []struct{ section, want string }{
		{"tcp-0", ""},
		{"tcp-kinds", ""},
		{"tls-only", `listener "tls-only" of Gateway gw/shared does not admit TCPRoutes`},
		{"tls", `has protocol TLS, and a TCPRoute class's routes attach only to protocol TCP`},
		{"none", `Gateway gw/shared has no listener named "none"`},
	} {
		s, problem := CheckTCPSection(gw, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: tc.section})
		if (tc.want == "") != (problem == "") || !strings.Contains(problem, tc.want) {
			t.Errorf("%s: problem %q, want %q", tc.section, problem, tc.want)
		}
		if tc.section == "tcp-0" && s.Port != 19000 {
			t.Errorf("section %+v", s)
		}
	}
}

func TestGatewayAddress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []gwv1.GatewayStatusAddress
		want  string
		typ   v1alpha1.AddressType
		ok    bool
	}{
		{"none", nil, "", "", false},
		{"an IP, type defaulted", []gwv1.GatewayStatusAddress{{Value: "10.0.0.1"}}, "10.0.0.1", v1alpha1.AddressTypeIP, true},
		{"an IPv6 address", []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "fd00::1"}}, "fd00::1", v1alpha1.AddressTypeIP, true},
		{"a hostname", []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.HostnameAddressType), Value: "gw.example.com"}}, "gw.example.com", v1alpha1.AddressTypeHostname, true},
		{"a named address first", []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.NamedAddressType), Value: "pool"}, {Value: "10.0.0.2"}}, "10.0.0.2", v1alpha1.AddressTypeIP, true},
	} {
		gw := &gwv1.Gateway{Status: gwv1.GatewayStatus{Addresses: tc.addrs}}
		if a, typ, ok := GatewayAddress(gw); a != tc.want || typ != tc.typ || ok != tc.ok {
			t.Errorf("%s: %q %q %v, want %q %q %v", tc.name, a, typ, ok, tc.want, tc.typ, tc.ok)
		}
	}
}

// TestTCPRouteVersion: v1 where served, else v1alpha2, else none.
func TestTCPRouteVersion(t *testing.T) {
	for _, tc := range []struct {
		served []string
		want   string
	}{
		{[]string{"v1"}, "v1"},
		{[]string{"v1alpha2", "v1"}, "v1"},
		{[]string{"v1alpha2"}, "v1alpha2"},
		{nil, ""},
	} {
		var gvs []schema.GroupVersion
		for _, v := range tc.served {
			gvs = append(gvs, schema.GroupVersion{Group: Group, Version: v})
		}
		m := meta.NewDefaultRESTMapper(gvs)
		for _, gv := range gvs {
			m.Add(gv.WithKind("TCPRoute"), meta.RESTScopeNamespace)
		}
		if got := TCPRouteVersion(m); got != tc.want {
			t.Errorf("served %v: %q, want %q", tc.served, got, tc.want)
		}
	}
}

// TestRouteSections: the sections a route names, with the API's defaults;
// a parentRef without a section names the whole Gateway.
func TestRouteSections(t *testing.T) {
	refs := []gwv1.ParentReference{
		{Name: "shared", SectionName: ptr.To(gwv1.SectionName("tcp-0"))},
		{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "shared", SectionName: ptr.To(gwv1.SectionName("tcp-1"))},
		{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "other"},
		{Kind: ptr.To(gwv1.Kind("Service")), Name: "mesh"},
	}
	want := []string{"tenant/shared/tcp-0", "gw/shared/tcp-1", "gw/other/"}
	if got := RouteSections("tenant", refs); !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// TestTCPRouteIsExposure: a TCPRoute carries the operator's labels and
// owner, its one section and backend, and nothing of the Listener's.
func TestTCPRouteIsExposure(t *testing.T) {
	l := listenerOf("kafka")
	l.Labels = map[string]string{"team": "a", LabelManagedBy: "someone-else", v1alpha1.LabelRouteListener: "other"}
	l.Annotations = map[string]string{"note": "x"}
	bs, err := TCPSections(tcpClass(3), l, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := TCPRoute(l, bs[0], "broker-0")
	if len(r.Labels) != 2 || r.Labels[LabelManagedBy] != LabelManagedByValue || r.Labels[v1alpha1.LabelRouteListener] != "broker-0" || len(r.Annotations) != 0 {
		t.Errorf("labels %v annotations %v", r.Labels, r.Annotations)
	}
	if owner, ok := MadeFor(r); !ok || owner != "broker-0" {
		t.Errorf("MadeFor = %q %v", owner, ok)
	}
	if len(r.Spec.ParentRefs) != 1 || *r.Spec.ParentRefs[0].SectionName != "tcp-1" || r.Name != "broker-0.kafka" {
		t.Errorf("route %s parentRefs %+v", r.Name, r.Spec.ParentRefs)
	}
	if b := r.Spec.Rules[0].BackendRefs[0]; *b.Port != 9093 || b.Name != "broker-0" {
		t.Errorf("backend %+v", b)
	}
}
