package docrefs

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Kind is what a Ref names.
type Kind string

const (
	// Link is the target of a Markdown link: a path relative to the
	// document, with an optional #anchor ("#anchor" alone: the document
	// itself).
	Link Kind = "link"
	// Path is a slash-separated path written in code (`caches/intern.go`,
	// a command's argument), relative to the repository's root or to the
	// document.
	Path Kind = "path"
	// Target is a make target named in code (`make verify`).
	Target Kind = "make target"
)

// Ref is one thing a document names, with the line it is on.
type Ref struct {
	Kind  Kind
	Value string
	Line  int
}

var (
	fence    = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan = regexp.MustCompile("`([^`]+)`")
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// make at the start of a command: of the code, or after ;, &&, |, (
	// or sudo, behind any variable assignments.
	makeCall = regexp.MustCompile(`(?:^|[;&|(])\s*(?:sudo\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*make((?:[ \t]+[A-Za-z0-9_.=-]+)+)`)
	// goIdent is a Go package path with a name in it (api/addresses.PinnedNodes).
	goIdent    = regexp.MustCompile(`^(.*/[a-z0-9_]+)\.[A-Za-z_][A-Za-z0-9_]*$`)
	lineSuffix = regexp.MustCompile(`:\d+(:\d+)?$`)
	heading    = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t#]*$`)
)

// Scan returns what the Markdown document md names: its links (not to
// other sites), the paths in its code (spans and fenced blocks) and the
// make targets its code runs.
func Scan(md string) []Ref {
	var refs []Ref
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		n := i + 1
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			refs = append(refs, inCode(line, n)...)
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if local(m[1]) {
				refs = append(refs, Ref{Kind: Link, Value: m[1], Line: n})
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			refs = append(refs, inCode(m[1], n)...)
		}
	}
	return refs
}

// local reports whether a link target is in the repository (not a URL).
func local(target string) bool {
	return !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:")
}

// inCode returns the paths and make targets in a piece of code.
func inCode(code string, line int) []Ref {
	var refs []Ref
	for _, m := range makeCall.FindAllStringSubmatch(code, -1) {
		for _, word := range strings.Fields(m[1]) {
			if strings.Contains(word, "=") || strings.HasPrefix(word, "-") {
				continue // a variable or a flag
			}
			refs = append(refs, Ref{Kind: Target, Value: word, Line: line})
		}
	}
	kubectl := strings.Contains(code, "kubectl")
	for _, word := range strings.Fields(code) {
		if kubectl && kubectlObject(word) {
			continue
		}
		if p, ok := pathIn(word); ok {
			refs = append(refs, Ref{Kind: Path, Value: p, Line: line})
		}
	}
	return refs
}

// kubectlObject reports whether word is how kubectl names an object by
// kind and name ("deploy/listener-operator"): a path to nothing in the tree.
func kubectlObject(word string) bool {
	kind, _, _ := strings.Cut(word, "/")
	switch kind {
	case "deploy", "deployment", "ds", "daemonset", "sts", "statefulset", "svc", "service", "pod", "po", "pvc", "pv", "node", "job", "cm", "secret", "lease":
		return true
	}
	return false
}

// pathIn returns the relative path a word of code is, if it is one: it has
// a slash between two names and nothing of a pattern, a placeholder, a
// URL or an absolute path. "./" in front, a Go package pattern's "/...",
// a ":line" and a Go name (".Marked") after are dropped, and so is
// punctuation around it.
func pathIn(word string) (string, bool) {
	word = strings.TrimFunc(word, func(r rune) bool { return strings.ContainsRune(`"'(),;[]`, r) })
	word = strings.TrimSuffix(strings.TrimPrefix(word, "./"), "/...")
	word = strings.TrimRight(word, ".:")
	word = lineSuffix.ReplaceAllString(word, "")
	if m := goIdent.FindStringSubmatch(word); m != nil && !strings.Contains(word[len(m[1]):], "/") && !knownExtension(word) {
		word = m[1]
	}
	if !strings.Contains(strings.Trim(word, "/"), "/") || strings.HasPrefix(word, "/") ||
		strings.HasPrefix(word, "../") || strings.Contains(word, "://") ||
		strings.ContainsAny(word, "<>*{}$?=@,|\\") {
		return "", false
	}
	return word, true
}

// knownExtension reports whether word ends in the extension of a file the
// docs name (so "caches/intern.go" is a file, "api/claims.Marked" a name in
// a package).
func knownExtension(word string) bool {
	for _, ext := range []string{".go", ".md", ".yaml", ".yml", ".json", ".sh", ".txt", ".mod", ".sum", ".tpl", ".png", ".svg", ".toml", ".conf"} {
		if strings.HasSuffix(word, ext) {
			return true
		}
	}
	return false
}

// Anchors returns the anchors of the headings of a Markdown document, as
// GitHub makes them: lower case, without punctuation, spaces as hyphens,
// and "-1", "-2", … after a heading that repeats.
func Anchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		slug := Slug(m[1])
		if k := seen[slug]; k > 0 {
			anchors[slug+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// Slug is GitHub's anchor of a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
