package webhooks

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestListenerClassHostnameValidation: a hostname template that cannot
// make a DNS name, or lets two namespaces claim one, is refused at
// admission with a message that names the field and the fix.
func TestListenerClassHostnameValidation(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range []struct {
		name string
		p    v1alpha1.HostnamePolicy
		want string // "" admits
	}{
		{"per namespace", v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}, ""},
		{"one namespace, said so", v1alpha1.HostnamePolicy{Template: "{listener}.kafka.example.com", AllowWithoutNamespace: ptr(true)}, ""},
		{"no namespace", v1alpha1.HostnamePolicy{Template: "{listener}.kafka.example.com"},
			`spec.hostname.template: Invalid value: "{listener}.kafka.example.com": must contain {namespace}, so that two namespaces cannot claim one DNS name (set allowWithoutNamespace: true if only one namespace uses this class)`},
		{"unknown placeholder", v1alpha1.HostnamePolicy{Template: "{pod}.{namespace}.example.com"},
			`spec.hostname.template: Invalid value: "{pod}.{namespace}.example.com": unknown placeholder {pod}: use {listener} and {namespace}`},
		{"not a DNS name", v1alpha1.HostnamePolicy{Template: "{listener}_{namespace}.example.com"},
			`spec.hostname.template: Invalid value: "{listener}_{namespace}.example.com": hostname "a_a.example.com" is not a DNS name: a lowercase RFC 1123 subdomain must consist of`},
		{"label too long", v1alpha1.HostnamePolicy{Template: "{listener}." + strings.Repeat("x", 64) + ".{namespace}"},
			`is longer than 63 characters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "hostname-"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", Hostname: &tc.p}}
			err := e.Client.Create(t.Context(), class)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("create: %v, want admitted", err)
				}
				_ = e.Client.Delete(t.Context(), class)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}
