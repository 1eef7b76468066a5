package webhooks

import (
	"context"
	"fmt"
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

// TestListenerClassHostnameOneToOne: a new class, or a class whose
// template changes, is refused when its template can give two Listeners one
// name, with a message that names the problem and both fixes; a class
// whose template stays as it was (stored before the rule, or its opt-in
// removed) is admitted with a warning, so the names it publishes survive.
func TestListenerClassHostnameOneToOne(t *testing.T) {
	e := testenv.Require(t, env)
	name := "hostname-one-to-one"
	apply := func(template string, allowAmbiguous bool, annotation string) (string, error) {
		manifest := fmt.Sprintf(`apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata: {name: %s}
spec:
  serviceType: ClusterIP
  serviceAnnotations: {note: %q}
  hostname: {template: %q, allowAmbiguous: %t}
`, name, annotation, template, allowAmbiguous)
		return e.Kubectl(t.Context(), []byte(manifest), "apply", "-f", "-")
	}
	t.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), nil, "delete", "listenerclass", name, "--ignore-not-found")
	})
	const flat = "{listener}-{namespace}.example.test"
	refused := []string{
		`spec.hostname.template: Invalid value: "{listener}-{namespace}.example.test": {listener} and {namespace} share the DNS label "{listener}-{namespace}", so two Listeners can get one name: Listener "web" in namespace "v-shop" and Listener "web-v" in namespace "shop" both get "web-v-shop.example.test"`,
		`put each placeholder in a DNS label of its own (e.g. "{listener}.{namespace}.example.test"), or set spec.hostname.allowAmbiguous: true`,
	}
	warned := `Warning: spec.hostname.template: {listener} and {namespace} share the DNS label "{listener}-{namespace}"`
	for _, step := range []struct {
		name           string
		template       string
		allowAmbiguous bool
		want           []string // in kubectl's output
		wantRefused    bool
		notWant        string
	}{
		{name: "new, flattened", template: flat, want: refused, wantRefused: true},
		{name: "new, no {listener}", template: "www.{namespace}.example.test", wantRefused: true,
			want: []string{`has no {listener}, so every Listener of a namespace gets the same name`}},
		{name: "new, flattened, opted in", template: flat, allowAmbiguous: true, want: []string{"created"}, notWant: "Warning"},
		{name: "opt-in removed, template kept", template: flat, want: []string{"configured", warned}},
		{name: "other field changed, template kept", template: flat, want: []string{"configured", warned}},
		{name: "template changed to another flattened one", template: "{namespace}-{listener}.example.test", wantRefused: true,
			want: []string{`share the DNS label "{namespace}-{listener}"`}},
		{name: "template changed to a one-to-one one", template: "{listener}.{namespace}.example.test", want: []string{"configured"}, notWant: "Warning"},
	} {
		out, err := apply(step.template, step.allowAmbiguous, step.name)
		if (err != nil) != step.wantRefused {
			t.Errorf("%s: kubectl apply: %v: %s; want refused: %t", step.name, err, out, step.wantRefused)
		}
		for _, w := range step.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: kubectl output:\n%s\nlacks: %s", step.name, out, w)
			}
		}
		if step.notWant != "" && strings.Contains(out, step.notWant) {
			t.Errorf("%s: kubectl output:\n%s\nhas %q", step.name, out, step.notWant)
		}
	}
}
