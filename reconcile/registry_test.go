package reconcile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

const module = "github.com/listener-operator/listener-operator"

// goFiles parses the non-test Go files under dir (relative to this
// package), by the directory they are in (slash-separated, relative to the
// repository's root).
func goFiles(t *testing.T, dirs ...string) map[string][]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEveryControllerIsInTheRegistry: a package under reconcile/ that
// builds a controller is in Controllers, so a controller cannot be wired
// beside the registry.
func TestEveryControllerIsInTheRegistry(t *testing.T) {
	registered := map[string]bool{}
	for _, c := range Controllers() {
		fn := runtime.FuncForPC(reflect.ValueOf(c.Setup).Pointer()).Name()
		registered[fn[:strings.LastIndex(fn, ".")]] = true
	}
	found := 0
	for dir, files := range goFiles(t, "reconcile") {
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "NewControllerManagedBy" && sel.Sel.Name != "ControllerManagedBy") {
					return true
				}
				found++
				if !registered[module+"/"+dir] {
					t.Errorf("%s builds a controller that is not in the registry: add its Setup to Controllers (reconcile/setup.go)", dir)
				}
				return false
			})
		}
	}
	if found < len(Controllers()) {
		t.Errorf("found %d controllers built under reconcile/, the registry has %d: is the scan broken?", found, len(Controllers()))
	}
}

// TestCmdRunsTheRegistryOnly: cmd/ imports no controller package, so what
// it runs on the leader is what SetupWithManager sets up: the registry.
func TestCmdRunsTheRegistryOnly(t *testing.T) {
	imports := 0
	for _, files := range goFiles(t, "cmd/listener-operator") {
		for _, f := range files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				imports++
				if strings.HasPrefix(path, module+"/reconcile/") {
					t.Errorf("cmd/listener-operator imports %s: it sets the leader up through reconcile.SetupWithManager (the registry) only", path)
				}
			}
		}
	}
	if imports == 0 {
		t.Fatal("found no imports in cmd/listener-operator: is the scan broken?")
	}
}

// TestSetupRunsEveryRegisteredController: with every controller enabled,
// SetupWithManager sets up each of the registry once, by its name.
func TestSetupRunsEveryRegisteredController(t *testing.T) {
	e := testenv.Require(t, reconciletest.Env)
	mgr, err := ctrl.NewManager(reconciletest.OperatorConfig, ctrl.Options{
		Scheme:     e.Scheme,
		Cache:      caches.Webhooks(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	view, err := caches.ReconcilerView(mgr)
	if err != nil {
		t.Fatal(err)
	}
	opts := reconciletest.Options()
	opts.NodeLoss.Enabled, opts.Provision.Enabled = true, true
	var setUp []string
	opts.Wrap = func(name string, r crreconcile.Reconciler) crreconcile.Reconciler {
		setUp = append(setUp, name)
		return r
	}
	if err := SetupWithManager(view, opts, view.GetEventRecorder(v1alpha1.FieldManager)); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range Controllers() {
		want = append(want, c.Name)
	}
	if !slices.Equal(setUp, want) {
		t.Errorf("SetupWithManager set up %v, want the registry's %v", setUp, want)
	}
	// The names are distinct (Wrap, metrics and traces tell them apart).
	if slices.Sort(want); len(slices.Compact(want)) != len(Controllers()) {
		t.Errorf("the registry names a controller twice: %v", want)
	}
}

// TestLookupsUseRegisteredIndexes: every cache index that a lookup of the
// controllers (or of caches, which they call) lists by is one the
// registry registers (lookup.Indexes). A string literal as a field is a
// field selector the API server answers (a live read), not an index.
func TestLookupsUseRegisteredIndexes(t *testing.T) {
	files := goFiles(t, "reconcile", "caches")
	consts := map[string]ast.Expr{} // "package.Name" → its value
	for _, fs := range files {
		for _, f := range fs {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							consts[f.Name.Name+"."+name.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var resolve func(pkg string, e ast.Expr) (string, bool)
	resolve = func(pkg string, e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		case *ast.Ident:
			if v, ok := consts[pkg+"."+e.Name]; ok {
				return resolve(pkg, v)
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				if v, ok := consts[x.Name+"."+e.Sel.Name]; ok {
					return resolve(x.Name, v)
				}
			}
		}
		return "", false
	}
	registered := map[string]bool{}
	for _, ix := range lookup.Indexes() {
		registered[ix.Field] = true
	}
	// The indexes a controller registers itself, after start-up (the
	// Gateway API's, once its CRDs are served): the constants its
	// IndexField calls name, read from the code, not listed here.
	for _, fs := range files {
		for _, f := range fs {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 4 {
					return true
				}
				if fn, isSel := call.Fun.(*ast.SelectorExpr); isSel && fn.Sel.Name == "IndexField" {
					if field, ok := resolve(f.Name.Name, call.Args[2]); ok {
						registered[field] = true
					}
				}
				return true
			})
		}
	}
	checked := 0
	for dir, fs := range files {
		for _, f := range fs {
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if sel, isSel := lit.Type.(*ast.SelectorExpr); !isSel || sel.Sel.Name != "MatchingFields" {
					return true
				}
				for _, elt := range lit.Elts {
					key := elt.(*ast.KeyValueExpr).Key
					if _, literal := key.(*ast.BasicLit); literal {
						continue
					}
					field, ok := resolve(f.Name.Name, key)
					checked++
					switch {
					case !ok:
						t.Errorf("%s lists by an index whose name is not a constant: name it by a const of reconcile/internal/lookup", dir)
					case !registered[field]:
						t.Errorf("%s lists by index %q, which neither the registry (lookup.Indexes) nor a controller's IndexField registers: add it to lookup.Indexes", dir, field)
					}
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Errorf("only %d index lookups found: is the scan broken?", checked)
	}
}
