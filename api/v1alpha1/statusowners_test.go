package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEveryStatusPartHasOneWriter: every field of ListenerStatus and every
// condition type the package declares (a Condition… constant) has a row in
// the ownership table, and every writer has a field manager of its own: a
// new field or condition without a writer fails here.
func TestEveryStatusPartHasOneWriter(t *testing.T) {
	st := reflect.TypeFor[ListenerStatus]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if name == "conditions" {
			continue
		}
		if w, ok := StatusFieldWriter(name); !ok || w.FieldManager() == "" {
			t.Errorf("status field %s has no writer in statusOwners", name)
		}
	}
	declared := conditionConstants(t)
	if len(declared) < 7 {
		t.Fatalf("found %d Condition constants (%v), want at least the 7 of today", len(declared), declared)
	}
	for name, typ := range declared {
		if w, ok := ConditionWriter(typ); !ok || w.FieldManager() == "" {
			t.Errorf("condition %s (%s) has no writer in statusOwners", typ, name)
		}
	}
	managers := map[string]StatusWriter{}
	for _, typ := range StatusConditionTypes() {
		w, _ := ConditionWriter(typ)
		if other, ok := managers[w.FieldManager()]; ok && other != w {
			t.Errorf("writers %s and %s share field manager %s", w, other, w.FieldManager())
		}
		managers[w.FieldManager()] = w
	}
	doc, err := os.ReadFile("listener_types.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range StatusConditionTypes() {
		if !strings.Contains(string(doc), strconv.Quote(typ)) {
			t.Errorf("the comment on ListenerStatus.Conditions (listener_types.go, the CRD's description) does not name condition %s", typ)
		}
	}
	if _, ok := ConditionWriter("Unknown"); ok {
		t.Error("a condition type outside the table has a writer")
	}
}

// conditionConstants are the string constants named Condition… that the
// package's non-test files declare, by name.
func conditionConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Condition") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}
