package caches

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The reconcilers (reconcile/, nodeloss, provision) and the CSI node
// plugin read pods from caches that keep what TrimPod keeps. A field they
// read that TrimPod drops is always empty there: no error, a wrong answer.
// TestPodFieldsReadAreKept fails when any of them, or any function of api/
// they call, reads one.

// podTypes are the types only a pod is made of (a PodTemplateSpec too,
// which these packages do not read): a field of one of them read anywhere
// in the scanned code is a field of a pod.
var podTypes = []any{corev1.Pod{}, corev1.PodSpec{}, corev1.PodStatus{}, corev1.Container{}, corev1.ContainerPort{},
	corev1.Volume{}, corev1.VolumeSource{}, corev1.EphemeralVolumeSource{}, corev1.PersistentVolumeClaimVolumeSource{},
	corev1.Affinity{}, corev1.NodeAffinity{}, corev1.PodCondition{}}

// livePodReaders are the functions of the scanned packages that read pods
// listed live from the API server, never from a cache, with why: the scan
// skips them.
var livePodReaders = map[string]string{
	"github.com/listener-operator/listener-operator/reconcile/pod.labelsFor": "the relabel scan lists the pods the webhook did not label, which no cache holds, from the API server",
}

// TestPodFieldsReadAreKept: every field of a pod's types that the scanned
// packages read (a selector expression of the field, or an ObjectMeta
// getter called on a pod), and every label and annotation of a pod they
// read by a constant key, is one TrimPod keeps.
func TestPodFieldsReadAreKept(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to load the packages")
	}
	kept := keptPodFields()
	for _, f := range []string{"PodSpec.NodeName", "PodSpec.InitContainers", "ObjectMeta.Finalizers"} {
		// What the scan is checked against must tell kept from dropped.
		if want := f == "PodSpec.NodeName"; kept[f] != want {
			t.Fatalf("keptPodFields()[%s] = %t, want %t: %v", f, kept[f], want, kept)
		}
	}
	reads := podReads(t, testenv.RepoRoot(), "./reconcile/...", "./csi/...")
	if len(reads) < 10 {
		t.Fatalf("found %d reads of pod fields, fewer than the scanned packages make: %v", len(reads), reads)
	}
	for _, r := range reads {
		switch {
		case r.label != "" && !PodLabelKept(r.label):
			t.Errorf("%s reads the pod label %q, which the caches drop (PodLabelKept)", r.pos, r.label)
		case r.annotation != "" && !strings.HasPrefix(r.annotation, operatorAnnotationPrefix):
			t.Errorf("%s reads the pod annotation %q, which the caches drop (operatorEntries)", r.pos, r.annotation)
		case r.field != "" && !kept[r.field]:
			t.Errorf("%s reads %s of a pod, which the caches drop (TrimPod)", r.pos, r.field)
		}
	}
}

// keptPodFields are the fields, as "Type.Field", that TrimPod keeps of a
// pod whose every field is set: Pending (its controller and affinity
// kept) and bound to a node, with a claim, an ephemeral volume, its Ready
// condition, the readiness gate of spec.podReadiness and its condition.
func keptPodFields() map[string]bool {
	kept := map[string]bool{}
	for _, node := range []string{"", "node-1"} {
		pod := &corev1.Pod{}
		fillAll(reflect.ValueOf(pod).Elem(), 0)
		pod.Spec.NodeName = node
		eph := corev1.Volume{}
		fillAll(reflect.ValueOf(&eph.Name).Elem(), 0)
		eph.Ephemeral = &corev1.EphemeralVolumeSource{}
		fillAll(reflect.ValueOf(eph.Ephemeral).Elem(), 0)
		pod.Spec.Volumes = append(pod.Spec.Volumes, eph)
		pod.Status.Conditions[0].Type = corev1.PodReady
		pod.Spec.ReadinessGates[0].ConditionType = v1alpha1.PodConditionAddressesReady
		gate := pod.Status.Conditions[0]
		gate.Type = v1alpha1.PodConditionAddressesReady
		pod.Status.Conditions = append(pod.Status.Conditions, gate)
		pod.Labels[v1alpha1.LabelListenerVolume] = "true"
		pod.Annotations[v1alpha1.AnnotationListenerClass] = "x"
		out, err := TrimPod(pod)
		if err != nil {
			panic(err)
		}
		setFields(reflect.ValueOf(out).Elem(), kept)
	}
	return kept
}

// fillAll sets every field under v to a value that is not zero.
func fillAll(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[metav1.Time]() {
			v.Set(reflect.ValueOf(metav1.Now()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0), depth+1)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth+1)
		fillAll(e, depth+1)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	}
}

// setFields records, as "Type.Field", every field under v that is set.
func setFields(v reflect.Value, out map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			setFields(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() && !v.Field(i).IsZero() {
				out[v.Type().Name()+"."+f.Name] = true
				setFields(v.Field(i), out)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			setFields(v.Index(i), out)
		}
	}
}

// podRead is one read of a pod's field, or of its label or annotation by a
// constant key.
type podRead struct {
	pos               token.Position
	field             string // "Type.Field"
	label, annotation string
}

// podReads type-checks the packages of patterns (in dir) and returns their
// reads of pod fields, and those of the functions of this module's api/
// they call, directly or not.
func podReads(t *testing.T, dir string, patterns ...string) []podRead {
	t.Helper()
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports}
	pkgs, err := packages.Load(cfg, append(slices.Clone(patterns), "./api/...")...)
	if err != nil {
		t.Fatal(err)
	}
	s := &podScan{funcs: map[string]funcBody{}, seen: map[string]bool{}, podTypes: map[string]bool{}}
	for _, pt := range podTypes {
		s.podTypes[reflect.TypeOf(pt).Name()] = true
	}
	var roots []funcBody
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("load %s: %v", p.PkgPath, p.Errors)
		}
		api := strings.Contains(p.PkgPath, "/listener-operator/api/")
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				fb := funcBody{pkg: p, decl: fd}
				obj, ok := p.TypesInfo.Defs[fd.Name].(*types.Func)
				if !ok {
					continue
				}
				_, live := livePodReaders[obj.FullName()]
				if live {
					s.liveFound = append(s.liveFound, obj.FullName())
				}
				switch {
				case api:
					s.funcs[obj.FullName()] = fb
				case !live:
					roots = append(roots, fb)
				}
			}
		}
	}
	for name := range livePodReaders {
		if !slices.Contains(s.liveFound, name) {
			t.Errorf("livePodReaders names %s, which the scanned packages do not have", name)
		}
	}
	for _, fb := range roots {
		s.scan(fb)
	}
	return s.reads
}

type funcBody struct {
	pkg  *packages.Package
	decl *ast.FuncDecl
}

type podScan struct {
	funcs    map[string]funcBody // api/ functions by full name
	seen     map[string]bool
	podTypes map[string]bool
	reads    []podRead
	// liveFound are the livePodReaders found.
	liveFound []string
}

// scan records the pod reads of fb, and scans the api/ functions it calls.
func (s *podScan) scan(fb funcBody) {
	info, fset := fb.pkg.TypesInfo, fb.pkg.Fset
	ast.Inspect(fb.decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			s.selection(fset, info, n)
		case *ast.IndexExpr:
			s.labelRead(fset, info, n)
		case *ast.CallExpr:
			if f := calledFunc(info, n.Fun); f != nil {
				if callee, ok := s.funcs[f.FullName()]; ok && !s.seen[f.FullName()] {
					s.seen[f.FullName()] = true
					s.scan(callee)
				}
			}
		}
		return true
	})
}

// selection records a field of a pod's type that sel reads, or an
// ObjectMeta getter called on a pod.
func (s *podScan) selection(fset *token.FileSet, info *types.Info, sel *ast.SelectorExpr) {
	selection, ok := info.Selections[sel]
	if !ok {
		return
	}
	recv := namedName(selection.Recv())
	switch selection.Kind() {
	case types.FieldVal:
		owner := fieldOwner(selection)
		if s.podTypes[owner] || owner == "ObjectMeta" && recv == "Pod" {
			s.reads = append(s.reads, podRead{pos: fset.Position(sel.Pos()), field: owner + "." + sel.Sel.Name})
		}
	case types.MethodVal:
		if f, ok := strings.CutPrefix(sel.Sel.Name, "Get"); ok && recv == "Pod" && slices.Contains([]string{"OwnerReferences", "Finalizers", "ManagedFields", "Labels", "Annotations"}, f) {
			s.reads = append(s.reads, podRead{pos: fset.Position(sel.Pos()), field: "ObjectMeta." + f})
		}
	}
}

// labelRead records a pod's label or annotation read by a constant key:
// pod.Labels[k], pod.GetAnnotations()[k].
func (s *podScan) labelRead(fset *token.FileSet, info *types.Info, ix *ast.IndexExpr) {
	key := info.Types[ix.Index]
	if key.Value == nil || key.Value.Kind() != constant.String {
		return
	}
	x := ix.X
	if call, ok := x.(*ast.CallExpr); ok {
		x = call.Fun
	}
	sel, ok := x.(*ast.SelectorExpr)
	if !ok {
		return
	}
	selection, ok := info.Selections[sel]
	if !ok || namedName(selection.Recv()) != "Pod" {
		return
	}
	r := podRead{pos: fset.Position(ix.Pos())}
	switch strings.TrimPrefix(sel.Sel.Name, "Get") {
	case "Labels":
		r.label = constant.StringVal(key.Value)
	case "Annotations":
		r.annotation = constant.StringVal(key.Value)
	default:
		return
	}
	s.reads = append(s.reads, r)
}

// fieldOwner is the name of the struct type that declares the field a
// selection selects (through embedded fields).
func fieldOwner(sel *types.Selection) string {
	t := sel.Recv()
	idx := sel.Index()
	for _, i := range idx[:len(idx)-1] {
		t = deref(t).Underlying().(*types.Struct).Field(i).Type()
	}
	return namedName(t)
}

// namedName is the name of t's named type (through a pointer), "" if none.
func namedName(t types.Type) string {
	if n, ok := deref(t).(*types.Named); ok && n.Obj().Pkg() != nil &&
		(n.Obj().Pkg().Path() == "k8s.io/api/core/v1" || n.Obj().Pkg().Path() == "k8s.io/apimachinery/pkg/apis/meta/v1") {
		return n.Obj().Name()
	}
	return ""
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// calledFunc is the function or method fun names, nil if none.
func calledFunc(info *types.Info, fun ast.Expr) *types.Func {
	switch f := fun.(type) {
	case *ast.Ident:
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr: // a generic function instantiated
		return calledFunc(info, f.X)
	}
	return nil
}
