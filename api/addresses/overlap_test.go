package addresses

import (
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestTemplatesOverlap: two classes' templates, each one-to-one or not,
// compared as patterns (a Listener name may fill several DNS labels); an
// overlap comes with two different Listeners that really get one name
// (issue 48, shape 3).
func TestTemplatesOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b    string
		overlap bool
	}{
		{"{listener}.{namespace}.zone", "{namespace}.{listener}.zone", true},
		{"{listener}.{namespace}.zone", "{listener}.{namespace}.zone", false}, // one Listener, one name, whichever class
		{"{listener}.{namespace}.zone", "{listener}.{namespace}.other", false},
		{"{listener}.{namespace}.a.test", "{listener}.a.test", true},                          // x.y.a.test: x/y, or Listener x.y anywhere
		{"{listener}.{namespace}.zone", "{listener}-x.{namespace}.zone", true},                // Listener "a-x" of the first, "a" of the second
		{"{listener}.{namespace}.zone", "{listener}.{namespace}-kafka.zone", true},            // namespace "b-kafka" of the first, "b" of the second
		{"{listener}.kafka.{namespace}.zone", "{listener}.{namespace}.zone", true},            // Listener "a.kafka" fills two labels
		{"{listener}.{namespace}.kafka.zone", "{listener}.{namespace}.zookeeper.zone", false}, // no name ends in both
		{"{listener}.{namespace}.zone", "{namespace}.zone", false},                            // three labels or more, or exactly two
		{"{listener}.{namespace}.zone", "www.{listener}.{namespace}.zone", true},              // Listener "www.a" of the first
		{"{listener}-{namespace}.zone", "{listener}.{namespace}.zone", true},
		{"x{listener}.{namespace}.zone", "y{listener}.{namespace}.zone", false},   // the first label starts with x, or with y
		{"{listener}.{listener}.{namespace}.z", "{listener}.{namespace}.z", true}, // "a.a.b.z": Listener a (first) and a.a (second) in b
		{"{namespace}.{listener}.svc.zone", "{namespace}.{listener}.pods.zone", false},
		{"{listener}.{namespace}.zone", "{listener}.{namespace}.zone", false},
		{"{listener}.{namespace}.zone", "{namespace}-{listener}.zone", true}, // flattened (allowAmbiguous): "a.b-c.zone"
	} {
		a, b := &v1alpha1.HostnamePolicy{Template: tc.a}, &v1alpha1.HostnamePolicy{Template: tc.b}
		for _, order := range [][2]*v1alpha1.HostnamePolicy{{a, b}, {b, a}} {
			o, ok := TemplatesOverlap(order[0], order[1])
			if ok != tc.overlap {
				t.Errorf("TemplatesOverlap(%q, %q) = %v (%+v), want %v", order[0].Template, order[1].Template, ok, o, tc.overlap)
				continue
			}
			if !ok {
				continue
			}
			if o.Host == "" {
				t.Errorf("TemplatesOverlap(%q, %q): no example", order[0].Template, order[1].Template)
				continue
			}
			if !differ(o.A, o.B) || !renders(order[0], o.A, o.Host) || !renders(order[1], o.B, o.Host) {
				t.Errorf("TemplatesOverlap(%q, %q) = %+v: not two Listeners that get %q", order[0].Template, order[1].Template, o, o.Host)
			}
		}
	}
}
