package docrefs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	makeAssign   = regexp.MustCompile(`^(?:override[ \t]+)?([A-Za-z0-9_]+)[ \t]*(?::=|::=|\?=|\+=|=)`)
	makeRuleLine = regexp.MustCompile(`^([^\t#=][^=]*?):([^=].*)?$`)
	makeVarRef   = regexp.MustCompile(`\$[({]([A-Za-z0-9_]+)[)}]`)
)

// TestMakefileDefinesBeforeRules: make expands a rule's targets and
// prerequisites when it reads the rule, so a variable defined further down
// is empty there. `test: $(KWOK)` above `KWOK :=` built no kwok on a fresh
// machine, and the suite that needs it failed in CI while every machine that
// had built it once passed.
func TestMakefileDefinesBeforeRules(t *testing.T) {
	for _, tc := range []struct {
		name, makefile string
		want           []string
	}{
		{name: "defined first", makefile: "A := x\nt: $(A)\n\ttrue\n"},
		{name: "defined after", makefile: "t: b $(A)\n\ttrue\nA := x\n", want: []string{"line 1 names $(A), defined on line 3"}},
		{name: "in the target", makefile: "$(A): x\n\ttrue\nA ?= y\n", want: []string{"line 1 names $(A), defined on line 3"}},
		{name: "recipe expands late", makefile: "t:\n\techo $(A)\nA := x\n"},
		{name: "assignment is no rule", makefile: "B := $(A)\nA := x\n"},
		{name: "from the environment", makefile: "t: $(HOME)\n\ttrue\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := usedBeforeDefined(tc.makefile)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range usedBeforeDefined(string(raw)) {
		t.Errorf("Makefile: %s: make reads it as empty there; move the definition above the rule", problem)
	}
}

// usedBeforeDefined names the rule lines whose targets or prerequisites use
// a variable the file defines only below them.
func usedBeforeDefined(makefile string) []string {
	lines := strings.Split(makefile, "\n")
	defined := map[string]int{}
	for i, line := range lines {
		if m := makeAssign.FindStringSubmatch(line); m != nil {
			if _, seen := defined[m[1]]; !seen {
				defined[m[1]] = i + 1
			}
		}
	}
	var problems []string
	for i, line := range lines {
		if makeAssign.MatchString(line) {
			continue
		}
		head, _, _ := strings.Cut(line, "##")
		head, _, _ = strings.Cut(head, ";")
		if !makeRuleLine.MatchString(head) {
			continue
		}
		for _, ref := range makeVarRef.FindAllStringSubmatch(head, -1) {
			if at, ok := defined[ref[1]]; ok && at > i+1 {
				problems = append(problems, fmt.Sprintf("line %d names $(%s), defined on line %d", i+1, ref[1], at))
			}
		}
	}
	return problems
}
