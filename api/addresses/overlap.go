package addresses

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Overlap is a name two templates give two different Listeners: A's by the
// first template, B's by the second. An empty Namespace stands for any
// namespace (a template without {namespace}), an empty Name for any
// Listener (one without {listener}). Host is "" when the templates were
// found to meet as patterns but no such pair was confirmed (a template
// that repeats a placeholder, whose copies must agree).
type Overlap struct {
	Host string
	A, B types.NamespacedName
}

// TemplatesOverlap reports whether two hostname templates (of two classes)
// can give two different Listeners one name, with an example. Each may be
// one-to-one on its own ("{listener}.{namespace}.zone" and
// "{namespace}.{listener}.zone" are) and still meet the other: Listener
// "a" in namespace "b" of the first and Listener "b" in namespace "a" of
// the second both get "a.b.zone". The renderer substitutes text, and a
// Listener name may hold dots, so one placeholder can fill several DNS
// labels: the templates are compared as patterns over the characters of a
// name ({listener} a DNS subdomain, {namespace} a DNS label), never label
// by label. Identical one-to-one templates do not overlap: a Listener gets
// the same name under either, and no other Listener gets it.
//
// It searches the product of the two patterns for the shortest name that
// both render with the characters split differently between the
// placeholders (or with a placeholder one template lacks, which any
// Listener or namespace fills), then confirms two different Listeners
// with ListenersNamed. Each pattern has a state per character of its
// template, so the search is bounded by the square of their lengths.
func TemplatesOverlap(a, b *v1alpha1.HostnamePolicy) (Overlap, bool) {
	pa, pb := newPattern(a.Template), newPattern(b.Template)
	free := !pa.has(PlaceholderListener) || !pa.has(PlaceholderNamespace) || !pb.has(PlaceholderListener) || !pb.has(PlaceholderNamespace)
	host, ok := shortestShared(pa, pb, alphabet(a.Template, b.Template), free)
	if !ok {
		return Overlap{}, false
	}
	if o, ok := confirm(a, b, host); ok {
		return o, true
	}
	// The split differs but the values happen to agree ("a.a.zone" under
	// "{listener}.{namespace}.zone" and "{namespace}.{listener}.zone"):
	// another letter in one place tells them apart.
	for i := 0; i < len(host); i++ {
		if !isAlnum(host[i]) {
			continue
		}
		for _, c := range []byte("bcz9") {
			if c == host[i] {
				continue
			}
			if o, ok := confirm(a, b, host[:i]+string(c)+host[i+1:]); ok {
				return o, true
			}
		}
	}
	return Overlap{}, true
}

// confirm finds two different Listeners that a and b give the name host.
func confirm(a, b *v1alpha1.HostnamePolicy, host string) (Overlap, bool) {
	for _, x := range ListenersNamed(a, host) {
		for _, y := range ListenersNamed(b, host) {
			if differ(x, y) && renders(a, x, host) && renders(b, y, host) {
				return Overlap{Host: host, A: x, B: y}, true
			}
		}
	}
	return Overlap{}, false
}

// differ: two Listeners that may be different ones; an empty field (any)
// can always be filled with something the other's is not.
func differ(x, y types.NamespacedName) bool {
	return x.Name == "" || y.Name == "" || x.Namespace == "" || y.Namespace == "" || x != y
}

func renders(p *v1alpha1.HostnamePolicy, l types.NamespacedName, host string) bool {
	got, err := RenderHostname(p, l.Name, l.Namespace)
	return err == nil && got == host
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// alphabet is the characters a shared name is tried with: two letters no
// template spells (so that placeholders can take different values), "-",
// ".", and every character of the templates' own text.
func alphabet(templates ...string) []byte {
	text := map[byte]bool{}
	for _, t := range templates {
		for _, tok := range tokenize(t) {
			for i := 0; i < len(tok.text); i++ {
				text[tok.text[i]] = true
			}
		}
	}
	var out []byte
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyz0123456789") {
		if len(out) < 2 && !text[c] {
			out = append(out, c)
		}
	}
	out = append(out, '-', '.')
	var own []byte
	for c := range text {
		if c != '-' && c != '.' {
			own = append(own, c)
		}
	}
	sort.Slice(own, func(i, j int) bool { return own[i] < own[j] })
	return append(out, own...)
}

// pattern is a template as a nondeterministic automaton over the
// characters of a name: a state is a token and a position in it (an
// offset in fixed text; in a placeholder, 0 at the start of a DNS label,
// 1 after a letter or digit, 2 after "-").
type pattern struct{ toks []token }

type pstate struct{ tok, sub int }

func newPattern(template string) pattern { return pattern{toks: tokenize(template)} }

func (p pattern) has(ph string) bool {
	for _, t := range p.toks {
		if t.placeholder == ph {
			return true
		}
	}
	return false
}

func (p pattern) done(s pstate) bool { return s.tok == len(p.toks) }

// closure is s and the states reached from it without a character: past
// the end of a placeholder that may end here.
func (p pattern) closure(s pstate) []pstate {
	out := []pstate{s}
	for !p.done(s) && p.toks[s.tok].placeholder != "" && s.sub == 1 {
		s = pstate{tok: s.tok + 1}
		out = append(out, s)
	}
	return out
}

// step is where s goes on character c, and whether a placeholder (and
// which) or fixed text took it.
func (p pattern) step(s pstate, c byte) ([]pstate, string, bool) {
	if p.done(s) {
		return nil, "", false
	}
	t := p.toks[s.tok]
	if t.placeholder == "" {
		if t.text[s.sub] != c {
			return nil, "", false
		}
		next := pstate{tok: s.tok, sub: s.sub + 1}
		if next.sub == len(t.text) {
			next = pstate{tok: s.tok + 1}
		}
		return p.closure(next), "", true
	}
	var sub int
	switch {
	case isAlnum(c):
		sub = 1
	case c == '-' && s.sub != 0:
		sub = 2
	case c == '.' && s.sub == 1 && t.placeholder == PlaceholderListener:
		sub = 0
	default:
		return nil, "", false
	}
	return p.closure(pstate{tok: s.tok, sub: sub}), t.placeholder, true
}

// pnode is a state of the product search: a state of each pattern, and
// whether some character so far was taken differently by the two (by
// another placeholder, or by fixed text in one and a placeholder in the
// other).
type pnode struct {
	a, b   pstate
	differ bool
}

// shortestShared is the shortest name both patterns accept with the
// characters taken differently (or any shared name when free).
func shortestShared(pa, pb pattern, alpha []byte, free bool) (string, bool) {
	type from struct {
		prev pnode
		c    byte
	}
	seen := map[pnode]from{}
	var queue []pnode
	for _, a := range pa.closure(pstate{}) {
		for _, b := range pb.closure(pstate{}) {
			n := pnode{a: a, b: b}
			seen[n] = from{}
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if pa.done(n.a) && pb.done(n.b) && (n.differ || free) {
			var sb strings.Builder
			var rev []byte
			for cur := n; ; {
				f := seen[cur]
				if f.c == 0 {
					break
				}
				rev = append(rev, f.c)
				cur = f.prev
			}
			for i := len(rev) - 1; i >= 0; i-- {
				sb.WriteByte(rev[i])
			}
			return sb.String(), true
		}
		for _, c := range alpha {
			as, ka, okA := pa.step(n.a, c)
			bs, kb, okB := pb.step(n.b, c)
			if !okA || !okB {
				continue
			}
			for _, a := range as {
				for _, b := range bs {
					m := pnode{a: a, b: b, differ: n.differ || ka != kb}
					if _, ok := seen[m]; !ok {
						seen[m] = from{prev: n, c: c}
						queue = append(queue, m)
					}
				}
			}
		}
	}
	return "", false
}
