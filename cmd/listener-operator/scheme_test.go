package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestSchemeCoversImports: every kind of every Kubernetes API package that
// a package of this module linked into the binary imports is in the
// scheme the subcommands use, so that the narrow scheme misses nothing a
// cache, a client or an event reference may be asked about.
// AdmissionReviews are decoded by controller-runtime's webhook server with
// its own scheme.
func TestSchemeCoversImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imported := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "github.com/listener-operator/listener-operator/") {
			continue
		}
		for _, p := range fields[1:] {
			if strings.HasPrefix(p, "k8s.io/api/") && p != "k8s.io/api/admission/v1" {
				imported[p] = true
			}
		}
	}
	if len(imported) == 0 {
		t.Fatal("go list found no Kubernetes API package: the test reads nothing")
	}
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for gvk, typ := range clientgoscheme.Scheme.AllKnownTypes() {
		if !imported[typ.PkgPath()] {
			continue
		}
		covered[typ.PkgPath()] = true
		if !s.Recognizes(gvk) {
			t.Errorf("%s (package %s, imported by the binary) is not in newScheme", gvk, typ.PkgPath())
		}
	}
	for p := range imported {
		if !covered[p] {
			t.Errorf("package %s is imported by the binary but is no API group client-go knows: check it by hand", p)
		}
	}
}

// BenchmarkSchemeHeap: the heap one scheme holds, the subcommands' own
// (newScheme) and one with every group of client-go's as before
// (clientgoscheme.AddToScheme with the operator's and cert-manager's).
func BenchmarkSchemeHeap(b *testing.B) {
	every := func() (*kruntime.Scheme, error) {
		s := kruntime.NewScheme()
		for _, add := range []func(*kruntime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, cmv1.AddToScheme} {
			if err := add(s); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	for _, tt := range []struct {
		name string
		make func() (*kruntime.Scheme, error)
	}{{"newScheme", newScheme}, {"every-group", every}} {
		b.Run(tt.name, func(b *testing.B) {
			const n = 20
			keep := make([]*kruntime.Scheme, 0, n)
			var per float64
			for range b.N {
				keep = keep[:0]
				before := liveHeap()
				for range n {
					s, err := tt.make()
					if err != nil {
						b.Fatal(err)
					}
					keep = append(keep, s)
				}
				per = float64(liveHeap()-before) / n
			}
			runtime.KeepAlive(keep)
			b.ReportMetric(per/1024, "KiB/scheme")
		})
	}
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
