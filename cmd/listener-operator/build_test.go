package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBuildsLinkNoTemplateEngine: the Makefile and the Dockerfile build the
// binary with the same tags, and with them it links no template engine.
// text/template calls reflect's MethodByName with names it reads at run
// time, so once it is linked the linker must keep every exported method of
// every type: 14 MB more binary, and 7 MB more resident in every process
// of the operator (docs/benchmarks.md). gRPC brings it in through
// golang.org/x/net/trace unless built with grpcnotrace.
func TestBuildsLinkNoTemplateEngine(t *testing.T) {
	makeTags := submatch(t, "../../Makefile", `(?m)^GO_TAGS\s*:=\s*(\S+)\s*$`)
	dockerTags := submatch(t, "../../Dockerfile", `go build [^\n]*-tags (\S+)`)
	if makeTags != dockerTags {
		t.Fatalf("the Makefile builds with tags %q, the Dockerfile with %q: the image would not be the binary that was tested and measured", makeTags, dockerTags)
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", makeTags, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for p := range strings.Lines(string(out)) {
		switch p = strings.TrimSpace(p); p {
		case "text/template", "html/template", "golang.org/x/net/trace":
			t.Errorf("built with tags %q the binary links %s; find who imports it with: go list -deps -tags %s -f '{{.ImportPath}}: {{.Imports}}' ./cmd/listener-operator | grep %s", makeTags, p, makeTags, p)
		}
	}
}

// submatch returns the first group of re's first match in the file.
func submatch(t *testing.T, file, re string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(re).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: nothing matches %s", file, re)
	}
	return string(m[1])
}
