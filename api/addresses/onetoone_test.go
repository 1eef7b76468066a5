package addresses

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestAmbiguityProblems: a template is one-to-one when {listener} and
// {namespace} never share a DNS label and {listener} occurs; each other
// template gets a sentence naming two Listeners that would share a name
// and both fixes, unless allowAmbiguous says the class accepts that.
func TestAmbiguityProblems(t *testing.T) {
	for _, tc := range []struct {
		template  string
		ambiguous bool
		allow     bool
		want      []string // in the one sentence
	}{
		{template: "{listener}.{namespace}.example.test"},
		{template: "{namespace}.{listener}.example.test"},
		{template: "{listener}.example.test"}, // allowWithoutNamespace decides that one
		{template: "{listener}-kafka.{namespace}.example.test"},
		{template: "kafka-{namespace}.{listener}.example.test"},
		{template: "{listener}-{listener}.{namespace}.example.test"},
		{template: "{listener}-{namespace}.example.test", ambiguous: true, want: []string{
			`{listener} and {namespace} share the DNS label "{listener}-{namespace}"`,
			`Listener "web" in namespace "v-shop" and Listener "web-v" in namespace "shop" both get "web-v-shop.example.test"`,
			`no separator can keep them apart`,
			`put each placeholder in a DNS label of its own (e.g. "{listener}.{namespace}.example.test")`,
			`or set spec.hostname.allowAmbiguous: true`,
			`HostnameConflict`,
		}},
		{template: "{namespace}-{listener}.example.test", ambiguous: true, want: []string{
			`Listener "v-shop" in namespace "web" and Listener "shop" in namespace "web-v" both get "web-v-shop.example.test"`,
		}},
		{template: "{listener}{namespace}.example.test", ambiguous: true, want: []string{`both get "webvshop.example.test"`}},
		{template: "x{listener}--{namespace}.example.test", ambiguous: true, want: []string{`both get "xweb--v--shop.example.test"`}},
		// Conservative: {listener} alone in the first label pins it, but
		// the rule does not look that far.
		{template: "{listener}.a-{namespace}-{listener}.test", ambiguous: true, want: []string{
			`{listener} and {namespace} share the DNS label "a-{namespace}-{listener}", so two Listeners may get one name`,
		}},
		{template: "{listener}-{namespace}.example.test", allow: true},
		{template: "www.{namespace}.example.test", ambiguous: true, want: []string{
			`has no {listener}, so every Listener of a namespace gets the same name`,
			`add {listener} in a DNS label of its own`,
			`or set spec.hostname.allowAmbiguous: true`,
		}},
	} {
		t.Run(tc.template, func(t *testing.T) {
			p := &v1alpha1.HostnamePolicy{Template: tc.template, AllowWithoutNamespace: ptr.To(true), AllowAmbiguous: ptr.To(tc.allow)}
			got := AmbiguityProblems(p)
			if !tc.ambiguous {
				if len(got) != 0 {
					t.Fatalf("AmbiguityProblems = %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("AmbiguityProblems = %q, want one sentence", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("AmbiguityProblems = %q\nwant it to say %q", got[0], w)
				}
			}
		})
	}
}

// smallNames are the valid names over a few characters: every Listener
// name (a DNS-1123 subdomain, so with dots) and namespace (a label) of up
// to four characters of "a", "b", "-" and ".".
func smallNames(withDots bool) []string {
	alphabet := []string{"a", "b", "-"}
	if withDots {
		alphabet = append(alphabet, ".")
	}
	var out []string
	level := []string{""}
	for range 4 {
		var next []string
		for _, s := range level {
			for _, c := range alphabet {
				next = append(next, s+c)
			}
		}
		for _, s := range next {
			if withDots && len(validation.IsDNS1123Subdomain(s)) == 0 || !withDots && len(validation.IsDNS1123Label(s)) == 0 {
				out = append(out, s)
			}
		}
		level = next
	}
	return out
}

var injectivityTemplates = []string{
	"{listener}.{namespace}.example.test",
	"{namespace}.{listener}.example.test",
	"{listener}-a.{namespace}.example.test",
	"a-{namespace}.b{listener}b.example.test",
	"{listener}.x.{listener}.{namespace}",
	"{listener}-{listener}.{namespace}",
	"{listener}-{namespace}.example.test",
	"{namespace}{listener}.example.test",
}

// TestOneToOneIsInjective proves the rule on every small name: a template
// AmbiguityProblems accepts never gives two Listeners one name, and one it
// refuses does for some.
func TestOneToOneIsInjective(t *testing.T) {
	listeners, namespaces := smallNames(true), smallNames(false)
	for _, tmpl := range injectivityTemplates {
		p := &v1alpha1.HostnamePolicy{Template: tmpl}
		seen := map[string]types.NamespacedName{}
		var collision string
		for _, l := range listeners {
			for _, ns := range namespaces {
				host, err := RenderHostname(p, l, ns)
				if err != nil {
					t.Fatalf("%s: RenderHostname(%q, %q): %v", tmpl, l, ns, err)
				}
				if o, ok := seen[host]; ok && collision == "" {
					collision = fmt.Sprintf("%s and %s/%s both get %q", o, ns, l, host)
				}
				seen[host] = types.NamespacedName{Namespace: ns, Name: l}
			}
		}
		oneToOne := len(AmbiguityProblems(p)) == 0
		if oneToOne && collision != "" {
			t.Errorf("%s is accepted as one-to-one, but %s", tmpl, collision)
		}
		if !oneToOne && collision == "" {
			t.Errorf("%s is refused as ambiguous, but no two small names collide", tmpl)
		}
	}
}

// TestListenersNamed: the Listeners a name can come from under a template
// are exactly those it renders that name for: one for a one-to-one
// template, every split of the shared label for a flattened one.
func TestListenersNamed(t *testing.T) {
	listeners, namespaces := smallNames(true), smallNames(false)
	for _, tmpl := range injectivityTemplates {
		p := &v1alpha1.HostnamePolicy{Template: tmpl}
		oneToOne := len(AmbiguityProblems(p)) == 0
		for _, l := range listeners {
			for _, ns := range namespaces {
				host, _ := RenderHostname(p, l, ns)
				got := ListenersNamed(p, host)
				if !slices.Contains(got, types.NamespacedName{Namespace: ns, Name: l}) {
					t.Fatalf("%s: ListenersNamed(%q) = %v, want %s/%s among them", tmpl, host, got, ns, l)
				}
				if oneToOne && len(got) != 1 {
					t.Fatalf("%s is one-to-one, but ListenersNamed(%q) = %v", tmpl, host, got)
				}
				for _, o := range got {
					if h, err := RenderHostname(p, o.Name, o.Namespace); h != host || err != nil {
						t.Fatalf("%s: ListenersNamed(%q) has %s, which gets %q, %v", tmpl, host, o, h, err)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		template, host string
		want           []types.NamespacedName
	}{
		{"{listener}-{namespace}.example.test", "web-v-shop.example.test", []types.NamespacedName{
			{Namespace: "v-shop", Name: "web"}, {Namespace: "shop", Name: "web-v"}}},
		{"{listener}.{namespace}.example.test", "a.b.c.example.test", []types.NamespacedName{{Namespace: "c", Name: "a.b"}}},
		{"{listener}.{namespace}.example.test", "a.b.example.org", nil},
		// Without {namespace}, any namespace; without {listener}, any name.
		{"{listener}.example.test", "web.example.test", []types.NamespacedName{{Name: "web"}}},
		{"www.{namespace}.example.test", "www.shop.example.test", []types.NamespacedName{{Namespace: "shop"}}},
		{"{listener}.{namespace}.example.test", "A.b.example.test", nil},
	} {
		got := ListenersNamed(&v1alpha1.HostnamePolicy{Template: tc.template}, tc.host)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListenersNamed(%q, %q) = %v, want %v", tc.template, tc.host, got, tc.want)
		}
	}
}
