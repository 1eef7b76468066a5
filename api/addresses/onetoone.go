package addresses

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// AmbiguityProblems says why a hostname template may give two Listeners
// one name, as a sentence with both fixes; nil when the template is
// one-to-one, or when p.AllowAmbiguous accepts that it is not (the
// reconciler then publishes each name for the first Listener only and
// reports HostnameConflict on the others).
//
// One-to-one means: {listener} occurs, and no DNS label of the template
// (the text between two of its dots) holds both {listener} and
// {namespace}. Whatever else the labels hold, that is enough: a namespace
// is one DNS label (no dots), a Listener name one or more, and the
// template's own text is fixed, so the number of labels of a rendered name
// tells how many the Listener name has, that tells which labels each
// placeholder became, and the fixed text around a placeholder in its label
// leaves its value (TestOneToOneIsInjective checks this on every small
// name). A label that holds both has no such fix: either name may contain
// any text a DNS label may (letters, digits and "-", e.g. namespace "a--b"
// for a separator "--"), so no separator within a label keeps them apart.
// The rule is conservative: a label holding both is refused even where
// another label already pins the name ("{listener}.x-{namespace}-{listener}").
func AmbiguityProblems(p *v1alpha1.HostnamePolicy) []string {
	if p.AllowAmbiguous != nil && *p.AllowAmbiguous {
		return nil
	}
	const optIn = "or set spec.hostname.allowAmbiguous: true to accept it: the operator then publishes each name for the first Listener that gets it only, and reports HostnameConflict on the others"
	if !strings.Contains(p.Template, PlaceholderListener) {
		return []string{fmt.Sprintf("has no %s, so every Listener of a namespace gets the same name; add %s in a DNS label of its own (e.g. %q), %s",
			PlaceholderListener, PlaceholderListener, PlaceholderListener+"."+p.Template, optIn)}
	}
	for _, label := range strings.Split(p.Template, ".") {
		if !strings.Contains(label, PlaceholderListener) || !strings.Contains(label, PlaceholderNamespace) {
			continue
		}
		own := strings.Replace(p.Template, label, PlaceholderListener+"."+PlaceholderNamespace, 1)
		return []string{fmt.Sprintf("%s and %s share the DNS label %q, so two Listeners %s, and no separator can keep them apart (either name may contain any text a DNS label may); "+
			"put each placeholder in a DNS label of its own (e.g. %q), %s",
			PlaceholderListener, PlaceholderNamespace, label, collisionExample(p, label), own, optIn)}
	}
	return nil
}

// collisionExample names two Listeners that p gives one name because
// label holds both placeholders: for "{listener}-{namespace}", Listener
// "web" in namespace "v-shop" and "web-v" in "shop". It says only "may
// get one name" when that pair does not collide under the whole template.
func collisionExample(p *v1alpha1.HostnamePolicy, label string) string {
	const vague = "may get one name"
	locs := placeholder.FindAllStringIndex(label, -1)
	for i := 1; i < len(locs); i++ {
		first, second := label[locs[i-1][0]:locs[i-1][1]], label[locs[i][0]:locs[i][1]]
		if first == second || !known(first) || !known(second) {
			continue
		}
		// first+mid+second: "web" + mid + "v"+mid+"shop" is also
		// "web"+mid+"v" + mid + "shop".
		mid := label[locs[i-1][1]:locs[i][0]]
		a := map[string]string{first: "web", second: "v" + mid + "shop"}
		b := map[string]string{first: "web" + mid + "v", second: "shop"}
		hostA, errA := RenderHostname(p, a[PlaceholderListener], a[PlaceholderNamespace])
		hostB, errB := RenderHostname(p, b[PlaceholderListener], b[PlaceholderNamespace])
		if errA != nil || errB != nil || hostA != hostB || !validNames(a) || !validNames(b) {
			return vague
		}
		return fmt.Sprintf("can get one name: Listener %q in namespace %q and Listener %q in namespace %q both get %q",
			a[PlaceholderListener], a[PlaceholderNamespace], b[PlaceholderListener], b[PlaceholderNamespace], hostA)
	}
	return vague
}

func known(ph string) bool { return ph == PlaceholderListener || ph == PlaceholderNamespace }

// validNames: the Listener name is a DNS-1123 subdomain and the namespace a
// DNS-1123 label, as the API server requires.
func validNames(vals map[string]string) bool {
	return len(validation.IsDNS1123Subdomain(vals[PlaceholderListener])) == 0 && len(validation.IsDNS1123Label(vals[PlaceholderNamespace])) == 0
}

// ListenersNamed are the Listeners (namespace and name) that p gives the
// name host: at most one when p is one-to-one (AmbiguityProblems), one for
// each way to split the shared label when it is not. An empty Namespace
// stands for every namespace (a template without {namespace}), an empty
// Name for every Listener of the namespace (one without {listener}). The
// reconciler finds the other Listeners that would publish a name this way,
// with a read of each, instead of rendering the name of every Listener.
func ListenersNamed(p *v1alpha1.HostnamePolicy, host string) []types.NamespacedName {
	toks := tokenize(p.Template)
	var out []types.NamespacedName
	vals := map[string]string{}
	var walk func(i, pos int)
	walk = func(i, pos int) {
		if i == len(toks) {
			l, hasL := vals[PlaceholderListener]
			ns, hasNS := vals[PlaceholderNamespace]
			if pos == len(host) && (!hasL || len(validation.IsDNS1123Subdomain(l)) == 0) && (!hasNS || len(validation.IsDNS1123Label(ns)) == 0) {
				out = append(out, types.NamespacedName{Namespace: ns, Name: l})
			}
			return
		}
		t := toks[i]
		if v, bound := vals[t.placeholder]; t.placeholder == "" || bound {
			if t.placeholder == "" {
				v = t.text
			}
			if strings.HasPrefix(host[pos:], v) {
				walk(i+1, pos+len(v))
			}
			return
		}
		// An unbound placeholder takes every prefix of what is left that
		// it may hold: a Listener name (dots too) or a namespace.
		for end := pos + 1; end <= len(host) && nameChar(host[end-1], t.placeholder == PlaceholderListener); end++ {
			vals[t.placeholder] = host[pos:end]
			walk(i+1, end)
		}
		delete(vals, t.placeholder)
	}
	walk(0, 0)
	return out
}

// nameChar reports whether c may occur in a namespace, or with dots in a
// Listener name.
func nameChar(c byte, dots bool) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || dots && c == '.'
}

// token is a placeholder of a template, or ("" placeholder) text as it
// stands; unknown placeholders stand as text, as RenderHostname leaves them.
type token struct{ placeholder, text string }

func tokenize(template string) []token {
	var toks []token
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(template, -1) {
		ph := template[loc[0]:loc[1]]
		if !known(ph) {
			continue
		}
		if loc[0] > last {
			toks = append(toks, token{text: template[last:loc[0]]})
		}
		toks = append(toks, token{placeholder: ph})
		last = loc[1]
	}
	if last < len(template) {
		toks = append(toks, token{text: template[last:]})
	}
	return toks
}
