package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestRouteName: the route of each Listener port has a valid name that no
// other Listener port of the namespace gets (issue 48, case 4); names that
// fit read <listener>.<port>, longer ones are one DNS label (no dot, so
// they are no name that fits).
func TestRouteName(t *testing.T) {
	a249, a250 := strings.Repeat("a", 249), strings.Repeat("a", 250)
	dotted := strings.Repeat("b.", 126) + "c" // 253 characters
	for _, tc := range []struct {
		listener, port string
		want           string // "" when shortened
	}{
		{"web", "tls", "web.tls"},
		{"web-tls", "tls", "web-tls.tls"},
		{"web", "tls-admin", "web.tls-admin"},
		{"web-tls", "admin", "web-tls.admin"},
		{"web.tls", "admin", "web.tls.admin"},
		{"web.tls", "tls", "web.tls.tls"},
		{a249, "tls", a249 + ".tls"}, // 253 characters: fits
		{a249, "tlss", ""},
		{a250, "tls", ""},
		{a250, "tlsx", ""},
		{a250 + "-tls", "tls", ""},
		{dotted, "tls", ""},
		{dotted, strings.Repeat("p", 63), ""},
	} {
		got := RouteName(tc.listener, tc.port)
		switch {
		case tc.want != "" && got != tc.want:
			t.Errorf("RouteName(%.20q…, %q) = %q, want %q", tc.listener, tc.port, got, tc.want)
		case tc.want == "":
			for _, msg := range validation.IsDNS1123Label(got) {
				t.Errorf("RouteName(%.20q…, %q) = %q, shortened to one DNS label: %s", tc.listener, tc.port, got, msg)
			}
		}
		for _, msg := range validation.IsDNS1123Subdomain(got) {
			t.Errorf("RouteName(%.20q…, %q) = %q: %s", tc.listener, tc.port, got, msg)
		}
	}
	// Distinct pairs, distinct names (a shortened name is one label, a
	// name that fits has two or more).
	seen := map[string]string{}
	for _, l := range []string{"web", "web-tls", "web.tls", "web.tls.tls", a249, a250, a250 + "-tls", dotted} {
		for _, p := range []string{"tls", "admin", "tls-admin", "tlss", "tlsx"} {
			name, who := RouteName(l, p), l+"/"+p
			if other, ok := seen[name]; ok {
				t.Errorf("RouteName gives %q to %.30s… and %.30s…", name, other, who)
			}
			seen[name] = who
		}
	}
}

// TestListenerLabelValue: the label value that names a Listener is a
// valid label value for every Listener name (the route of a Listener
// named with more than 63 characters was refused by the API server: issue
// 48, case 5), and the name itself when it fits.
func TestListenerLabelValue(t *testing.T) {
	for _, tc := range []struct{ listener, want string }{
		{"broker-0", "broker-0"},
		{"web.example", "web.example"},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), ""},
		{strings.Repeat("b.", 126) + "c", ""},
	} {
		got := ListenerLabelValue(tc.listener)
		if tc.want != "" && got != tc.want {
			t.Errorf("ListenerLabelValue(%.20q…) = %q, want %q", tc.listener, got, tc.want)
		}
		for _, msg := range validation.IsValidLabelValue(got) {
			t.Errorf("ListenerLabelValue(%.20q…) = %q: %s", tc.listener, got, msg)
		}
	}
	if ListenerLabelValue(strings.Repeat("a", 64)) == ListenerLabelValue(strings.Repeat("a", 65)) {
		t.Error("two long names share a label value")
	}
}
