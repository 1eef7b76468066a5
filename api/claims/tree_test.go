package claims

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const v1alpha1Path = "github.com/listener-operator/listener-operator/api/v1alpha1"

// ruleReads lists where a Go file reads a listener annotation
// (m[v1alpha1.AnnotationListenerClass], m[v1alpha1.AnnotationListenerName],
// outside the left side of an assignment) or compares with the listener
// storage class (== or != v1alpha1.StorageClassName): what only this
// package may do to decide what a claim is. Writing an annotation (a
// workload that makes claims) and naming one in a message are fine.
func ruleReads(fset *token.FileSet, f *ast.File) []string {
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == v1alpha1Path {
			local = "v1alpha1"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil
	}
	is := func(e ast.Expr, names ...string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Name != local {
			return false
		}
		for _, n := range names {
			if sel.Sel.Name == n {
				return true
			}
		}
		return false
	}
	written := map[ast.Expr]bool{}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN {
				for _, l := range n.Lhs {
					written[l] = true
				}
			}
		case *ast.IndexExpr:
			if !written[n] && is(n.Index, "AnnotationListenerClass", "AnnotationListenerName") {
				out = append(out, fmt.Sprintf("%s: reads %s", fset.Position(n.Pos()), n.Index.(*ast.SelectorExpr).Sel.Name))
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (is(n.X, "StorageClassName") || is(n.Y, "StorageClassName")) {
				out = append(out, fmt.Sprintf("%s: compares with the listener storage class", fset.Position(n.Pos())))
			}
		}
		return true
	})
	return out
}

// TestClaimRulesLiveHere: no non-test Go file outside api/ decides what a
// claim is by reading the listener annotations or the storage class; they
// ask this package.
func TestClaimRulesLiveHere(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	fset := token.NewFileSet()
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "api" || rel == "bin" || rel == "vendor" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, r := range ruleReads(fset, f) {
			found = append(found, strings.TrimPrefix(r, root+string(filepath.Separator)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files under %s: the walk missed the tree", files, root)
	}
	for _, f := range found {
		t.Errorf("%s: ask api/claims instead (Of, OfClaim, IsListenerClaim, Requested, Named)", f)
	}
}

// TestRuleReadsFinds: the check above finds what it looks for, under any
// import name, and lets writes and messages pass.
func TestRuleReadsFinds(t *testing.T) {
	const src = `package x

import (
	"fmt"
	api "github.com/listener-operator/listener-operator/api/v1alpha1"
)

func f(ann map[string]string, sc *string) {
	_ = ann[api.AnnotationListenerClass]
	if _, ok := ann[api.AnnotationListenerName]; ok {}
	_ = sc != nil && *sc == api.StorageClassName
	ann[api.AnnotationListenerClass] = "x"
	fmt.Println("use the", api.AnnotationListenerName, "annotation")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := ruleReads(fset, f)
	want := []string{"x.go:9:6: reads AnnotationListenerClass", "x.go:10:14: reads AnnotationListenerName", "x.go:11:19: compares with the listener storage class"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
