package gateway

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestRouteNamesUniqueInNamespace (issue 48, case 4): the routes of the
// Listeners of one namespace never share a name, whatever the Listeners
// and their ports are called. Listener "web" with ports tls and admin and
// a Listener named "web-tls" each get their own routes (with routes named
// "<listener>-<port>", "web-tls" was the other's and stayed ForeignRoute).
func TestRouteNamesUniqueInNamespace(t *testing.T) {
	class := classOf("gw/shared/tls", "gw/shared/admin", "gw/shared/tls-admin", "gw/shared/a")
	long := strings.Repeat("x", 240)
	for _, tc := range []struct {
		name      string
		listeners map[string][]string // Listener name -> its port names
	}{
		{"a port's route and a Listener named like it", map[string][]string{"web": {"tls", "admin"}, "web-tls": {"tls"}}},
		{"a port name with a dash", map[string][]string{"web": {"tls-admin", "a"}, "web-tls": {"admin", "a"}}},
		{"a Listener name with a dot", map[string][]string{"web": {"tls", "admin"}, "web.tls": {"tls"}, "web.tls.tls": {"tls"}}},
		{"one port, named like a section", map[string][]string{"web": {"tls"}, "web.tls": {"admin"}}},
		{"long names, shortened", map[string][]string{long: {"tls", "admin"}, long + "-tls": {"tls"}, long + ".tls": {"tls"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner := map[string]string{} // route name -> "listener/port"
			for name, ports := range tc.listeners {
				l := listenerOf(ports...)
				l.Name = name
				bs, errs := Bindings(class, l)
				if len(errs) > 0 {
					t.Fatalf("Listener %.20s…: %v", name, errs)
				}
				for _, b := range bs {
					who := name + "/" + b.Port.Name
					if other, ok := owner[b.RouteName]; ok {
						t.Errorf("route %q is both %.30s… and %.30s…", b.RouteName, other, who)
					}
					owner[b.RouteName] = who
				}
			}
		})
	}
}

// TestRouteOfLongListenerName (issue 48, case 5): a Listener name may have
// 253 characters and a label value 63; the route of a Listener with a long
// name still has a valid name and valid labels (the API server refused
// the route of every Listener name over 63 characters), and still names
// its Listener as owner.
func TestRouteOfLongListenerName(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 64), strings.Repeat("b.", 126) + "c", "broker-0"} {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: name, UID: "u"},
			Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: strings.Repeat("p", 63), Port: 9093}}}}
		bs, errs := Bindings(classOf("gw/shared/tls"), l)
		if len(errs) > 0 {
			t.Fatalf("Listener %.20s…: %v", name, errs)
		}
		r := Route(l, bs[0], "x.gw.test", "svc")
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			t.Errorf("route name %q: %s", r.Name, msg)
		}
		for k, v := range r.Labels {
			for _, msg := range validation.IsValidLabelValue(v) {
				t.Errorf("Listener %.20s…: route label %s=%q: %s", name, k, v, msg)
			}
		}
		if owner, ok := MadeFor(r); !ok || owner != name {
			t.Errorf("MadeFor = %.20q %v, want the Listener", owner, ok)
		}
	}
}
