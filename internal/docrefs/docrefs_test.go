package docrefs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   string
		want []Ref
	}{
		{
			name: "links to files and anchors, not to sites",
			md:   "See [install](docs/install.md#helm), [here](#layout) and [k8s](https://kubernetes.io/docs/).",
			want: []Ref{{Link, "docs/install.md#helm", 1}, {Link, "#layout", 1}},
		},
		{
			name: "paths in code spans, cleaned of what surrounds them",
			md:   "The rule (`caches/intern.go`), `go test ./hack/scale/...`, `reconcile/listener.go:254`, `api/claims.Marked` and `csi/addresstree`.",
			want: []Ref{{Path, "caches/intern.go", 1}, {Path, "hack/scale", 1}, {Path, "reconcile/listener.go", 1}, {Path, "api/claims", 1}, {Path, "csi/addresstree", 1}},
		},
		{
			name: "no placeholders, patterns, absolute paths or single names",
			md:   "`bin/k8s/<version>` `config/*.yaml` `/stackable/listener` `heldpod.go` `$(CONTROLLER_GEN)/x` `https://a/b` `kubectl logs deploy/listener-operator`",
		},
		{
			name: "make targets in a fenced block, without variables, flags and comments",
			md:   "text\n```sh\nNODES=3 make cluster-up   # three nodes\nmake generate manifests CONTROLLER_GEN=bin/x\n```\nmake sure it is prose",
			want: []Ref{{Target, "cluster-up", 3}, {Target, "generate", 4}, {Target, "manifests", 4}},
		},
		{
			name: "make targets in code spans only, where make starts a command",
			md:   "Run `make verify`; make sure of it. `rename it, or make it a listener volume` `cd x && make test`",
			want: []Ref{{Target, "verify", 1}, {Target, "test", 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Scan(tc.md); !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q)\n got %v\nwant %v", tc.md, got, tc.want)
			}
		})
	}
}

func TestAnchors(t *testing.T) {
	md := "# listener-operator\n## Quick start (developers)\n```sh\n# not a heading\n```\n## `make scale`: 1,000 claims\n## Results\n## Results\n#not a heading\n"
	want := []string{"listener-operator", "quick-start-developers", "make-scale-1000-claims", "results", "results-1"}
	got := Anchors(md)
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q among %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors %v, want only %v", got, want)
	}
}

// TestDocsNameWhatExists checks every file, anchor and make target that
// README.md, docs/*.md and the Helm chart's README name. A path is checked
// when its first name is one of the repository's top-level entries (or of
// the document's folder): `api/v1alpha1`, not `app.kubernetes.io/name`.
// bin/ is built, not committed, and not checked.
func TestDocsNameWhatExists(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "deploy/helm/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, _ := filepath.Rel(root, p)
			docs = append(docs, rel)
		}
	}
	targets := makeTargets(t, filepath.Join(root, "Makefile"))
	checked := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range Scan(string(raw)) {
			where := doc + ":" + strconv.Itoa(ref.Line)
			switch ref.Kind {
			case Target:
				checked++
				if !targets[ref.Value] {
					t.Errorf("%s names `make %s`: the Makefile has no such target", where, ref.Value)
				}
			case Link:
				checked++
				if msg := checkLink(root, doc, ref.Value); msg != "" {
					t.Errorf("%s links to %s: %s", where, ref.Value, msg)
				}
			case Path:
				if p, ok := pathToCheck(root, doc, ref.Value); ok {
					checked++
					if _, err := os.Stat(p); err != nil {
						t.Errorf("%s names %s: not in the tree", where, ref.Value)
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d references checked in %d documents: is the scan broken?", checked, len(docs))
	}
}

// pathToCheck returns where path, named in doc, would be, and whether to
// check it: when its first name is in the document's folder or at the top
// of the repository, and is not bin/.
func pathToCheck(root, doc, path string) (string, bool) {
	first, _, _ := strings.Cut(path, "/")
	if first == "bin" || first == ".work" {
		return "", false
	}
	for _, dir := range []string{filepath.Join(root, filepath.Dir(doc)), root} {
		if _, err := os.Stat(filepath.Join(dir, first)); err == nil {
			return filepath.Join(dir, path), true
		}
	}
	return "", false
}

// checkLink says what is wrong with a link from doc to target ("" if
// nothing): a missing file, or an anchor no heading of it makes.
func checkLink(root, doc, target string) string {
	file, anchor, _ := strings.Cut(target, "#")
	path := filepath.Join(root, doc)
	if file != "" {
		path = filepath.Join(root, filepath.Dir(doc), file)
	}
	if _, err := os.Stat(path); err != nil {
		return "no such file"
	}
	if anchor == "" || !strings.HasSuffix(path, ".md") {
		return ""
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if !Anchors(string(raw))[anchor] {
		return "no heading makes that anchor"
	}
	return ""
}

var makeRule = regexp.MustCompile(`^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*:([^=]|$)`)

// makeTargets returns the targets the Makefile's rules name.
func makeTargets(t *testing.T, makefile string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := makeRule.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	if !targets["test"] {
		t.Fatalf("found no target test in %s: %v", makefile, targets)
	}
	return targets
}

// TestBenchmarksHoldTodaysFiguresOnly: docs/benchmarks.md keeps one table of
// today's figures per benchmark, not a log of runs (those are in git), so
// it stays short enough to find a figure in.
func TestBenchmarksHoldTodaysFiguresOnly(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n >= 400 {
		t.Errorf("docs/benchmarks.md has %d lines, want under 400: replace a benchmark's old figures with its new ones (the history stays in git)", n)
	}
}
