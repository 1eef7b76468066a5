package addresstree

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// files returns every regular file under dir (following the tree's own
// symlinks the way a pod would read them) as path → content, and every
// symlink as path → "-> target".
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			dest, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out[rel] = "-> " + dest
		case d.Type().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

func TestWriteTree(t *testing.T) {
	target := t.TempDir()
	addrs := []v1alpha1.ListenerIngress{
		{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": 31092, "metrics": 30081}},
		{Address: "node-1.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 31092}},
		{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": 1}},
		{Address: "fd00::1", AddressType: v1alpha1.AddressTypeIP},
	}
	if _, err := Write(target, addrs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	want := map[string]string{
		"default-address/address":                  "10.0.0.7",
		"default-address/ports/kafka":              "31092",
		"default-address/ports/metrics":            "30081",
		"addresses/10.0.0.7/address":               "10.0.0.7",
		"addresses/10.0.0.7/ports/kafka":           "31092",
		"addresses/10.0.0.7/ports/metrics":         "30081",
		"addresses/node-1.example.com/address":     "node-1.example.com",
		"addresses/node-1.example.com/ports/kafka": "31092",
		"addresses/fd00::1/address":                "fd00::1",
	}
	for path, content := range want {
		if got := read(t, filepath.Join(target, path)); got != content {
			t.Errorf("%s = %q, want %q", path, got, content)
		}
	}
	if dest, err := os.Readlink(filepath.Join(target, "..data", DefaultAddress)); err != nil || dest != "addresses/10.0.0.7" {
		t.Errorf("default-address links to %q (%v), want the relative addresses/10.0.0.7", dest, err)
	}
	entries, _ := os.ReadDir(filepath.Join(target, AddressesDir))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"10.0.0.7", "fd00::1", "node-1.example.com"}) {
		t.Errorf("addresses/ holds %v, want one directory per distinct address", names)
	}
}

func TestWriteIsIdempotentAndSwapsAtomically(t *testing.T) {
	target := t.TempDir()
	first := []v1alpha1.ListenerIngress{{Address: "a.example.com", Ports: map[string]int32{"http": 8080}}}
	for i := range 10 {
		if _, err := Write(target, first); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	before := files(t, target)
	if got := read(t, filepath.Join(target, "default-address/ports/http")); got != "8080" {
		t.Fatalf("port after 10 writes = %q", got)
	}
	// Exactly one generation directory is left behind.
	entries, _ := os.ReadDir(target)
	var hidden []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.IsDir() {
			hidden = append(hidden, e.Name())
		}
	}
	if len(hidden) != 1 {
		t.Errorf("after 10 writes there are %d generations (%v), want 1", len(hidden), hidden)
	}

	second := []v1alpha1.ListenerIngress{{Address: "b.example.com", Ports: map[string]int32{"http": 9090}}}
	if _, err := Write(target, second); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if got := read(t, filepath.Join(target, "default-address/address")); got != "b.example.com" {
		t.Errorf("default-address after the address changed = %q", got)
	}
	if _, err := os.Stat(filepath.Join(target, "addresses/a.example.com")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old address still visible: %v", err)
	}
	after := files(t, target)
	if len(after) != len(before) {
		t.Errorf("tree shape changed: %d entries before, %d after", len(before), len(after))
	}
}

func TestWriteReplacesAPlainTree(t *testing.T) {
	// A tree written without the ..data indirection (by an older driver, say)
	// gets replaced, not merged.
	target := t.TempDir()
	if err := os.MkdirAll(filepath.Join(target, "addresses/old/ports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("addresses/old", filepath.Join(target, "default-address")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(target, []v1alpha1.ListenerIngress{{Address: "1.2.3.4"}}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got := read(t, filepath.Join(target, "default-address/address")); got != "1.2.3.4" {
		t.Errorf("default-address = %q", got)
	}
	if _, err := os.Stat(filepath.Join(target, "addresses/old")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale address directory survived: %v", err)
	}
}

func TestWriteRejectsBadInput(t *testing.T) {
	tests := []struct {
		name  string
		addrs []v1alpha1.ListenerIngress
		want  string
	}{
		{"no addresses", nil, "at least one address"},
		{"parent traversal", []v1alpha1.ListenerIngress{{Address: "../../etc"}}, `invalid address "../../etc"`},
		{"dot dot", []v1alpha1.ListenerIngress{{Address: ".."}}, `invalid address ".."`},
		{"slash", []v1alpha1.ListenerIngress{{Address: "a/b"}}, `invalid address "a/b"`},
		{"absolute", []v1alpha1.ListenerIngress{{Address: "/etc/passwd"}}, `invalid address "/etc/passwd"`},
		{"empty", []v1alpha1.ListenerIngress{{Address: ""}}, `invalid address ""`},
		{"hidden", []v1alpha1.ListenerIngress{{Address: "..data"}}, `invalid address "..data"`},
		{"ipv6 zone", []v1alpha1.ListenerIngress{{Address: "fe80::1%eth0"}}, "IPv6 zones are not allowed"},
		{"nul", []v1alpha1.ListenerIngress{{Address: "a\x00b"}}, "invalid address"},
		{"port name traversal", []v1alpha1.ListenerIngress{{Address: "a.b", Ports: map[string]int32{"../../x": 1}}}, `invalid port name "../../x"`},
		{"port name upper", []v1alpha1.ListenerIngress{{Address: "a.b", Ports: map[string]int32{"HTTP": 1}}}, `invalid port name "HTTP"`},
		{"port zero", []v1alpha1.ListenerIngress{{Address: "a.b", Ports: map[string]int32{"http": 0}}}, "between 1 and 65535"},
		{"port too big", []v1alpha1.ListenerIngress{{Address: "a.b", Ports: map[string]int32{"http": 70000}}}, "between 1 and 65535"},
		{"bad second address", []v1alpha1.ListenerIngress{{Address: "ok.example"}, {Address: "x/../../y"}}, "invalid address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			target := filepath.Join(parent, "target")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			// A good tree is in place; a bad write must leave it alone.
			if _, err := Write(target, []v1alpha1.ListenerIngress{{Address: "good.example"}}); err != nil {
				t.Fatal(err)
			}
			before := files(t, parent)
			_, err := Write(target, tt.addrs)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Write = %v, want an ErrInvalid error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if after := files(t, parent); !maps.Equal(after, before) || read(t, filepath.Join(target, "default-address/address")) != "good.example" {
				t.Errorf("a refused write changed the disk:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	target := filepath.Join(t.TempDir(), "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(target, []v1alpha1.ListenerIngress{{Address: "1.1.1.1"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time the target is already gone
		if err := Remove(target); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("target still exists: %v", err)
	}
}

func FuzzWriteTree(f *testing.F) {
	f.Add("10.0.0.1", "http", int32(80), "b.example.com", "kafka", int32(9092))
	f.Add("../x", "p", int32(1), "..", "../../etc", int32(2))
	f.Add("fe80::1%eth0", "", int32(0), "/abs", "a/b", int32(65536))
	f.Add("..data", "..", int32(-1), "a..b", "ports", int32(65535))
	f.Fuzz(func(t *testing.T, a1, p1 string, n1 int32, a2, p2 string, n2 int32) {
		parent := t.TempDir()
		target := filepath.Join(parent, "target")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "sentinel"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		addrs := []v1alpha1.ListenerIngress{
			{Address: a1, Ports: map[string]int32{p1: n1}},
			{Address: a2, Ports: map[string]int32{p2: n2}},
		}
		_, err := Write(target, addrs)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Write(%q) failed with a disk error: %v", addrs, err)
		}
		// Nothing outside the target changed.
		entries, _ := os.ReadDir(parent)
		if len(entries) != 2 {
			t.Fatalf("Write(%q) created entries next to the target: %v", addrs, entries)
		}
		// Nothing under the target points outside it.
		_ = filepath.WalkDir(target, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("walk: %v", err)
			}
			if d.Type()&fs.ModeSymlink != 0 {
				real, err := filepath.EvalSymlinks(path)
				if err != nil {
					t.Fatalf("dangling symlink %s: %v", path, err)
				}
				if !strings.HasPrefix(real, target+string(filepath.Separator)) {
					t.Fatalf("symlink %s resolves outside the target: %s", path, real)
				}
			}
			return nil
		})
		if err == nil {
			if got := read(t, filepath.Join(target, "default-address/address")); got != a1 {
				t.Fatalf("default-address/address = %q, want %q", got, a1)
			}
		} else if _, statErr := os.Lstat(filepath.Join(target, DefaultAddress)); !errors.Is(statErr, fs.ErrNotExist) {
			t.Fatalf("refused input %q left a tree behind", addrs)
		}
	})
}

// BenchmarkWrite measures a write that changes the tree (the address moved)
// and a republish of an unchanged tree.
func BenchmarkWrite(b *testing.B) {
	ports := map[string]int32{"kafka": 9092, "metrics": 9606, "jmx": 9999}
	trees := [][]v1alpha1.ListenerIngress{
		{{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: ports}},
		{{Address: "10.0.0.8", AddressType: v1alpha1.AddressTypeIP, Ports: ports}},
	}
	b.Run("changed", func(b *testing.B) {
		target := b.TempDir()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := Write(target, trees[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		target := b.TempDir()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Write(target, trees[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestWriteSkipsAnUnchangedTreeButRepairsADamagedOne(t *testing.T) {
	target := t.TempDir()
	addrs := []v1alpha1.ListenerIngress{{Address: "a.example", Ports: map[string]int32{"http": 80}}}
	if _, err := Write(target, addrs); err != nil {
		t.Fatal(err)
	}
	gen, _ := os.Readlink(filepath.Join(target, "..data"))
	if _, err := Write(target, addrs); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(target, "..data")); again != gen {
		t.Errorf("an unchanged tree was rewritten (%s → %s)", gen, again)
	}
	// Someone (not a pod: the volume is read-only for them) damaged it.
	if err := os.Remove(filepath.Join(target, gen, "addresses/a.example/ports/http")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(target, addrs); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(target, "default-address/ports/http")); got != "80" {
		t.Errorf("damaged tree not repaired: ports/http = %q", got)
	}
	// An address without ports still has its (empty) ports directory.
	if _, err := Write(target, []v1alpha1.ListenerIngress{{Address: "b.example"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(target, "default-address/ports")); err != nil || !fi.IsDir() {
		t.Errorf("default-address/ports is not a directory: %v", err)
	}
}

func TestWriteReportsChanges(t *testing.T) {
	target := t.TempDir()
	a := []v1alpha1.ListenerIngress{{Address: "a.example"}}
	b := []v1alpha1.ListenerIngress{{Address: "b.example"}}
	for i, step := range []struct {
		addrs []v1alpha1.ListenerIngress
		want  bool
	}{{a, true}, {a, false}, {b, true}, {b, false}, {a, true}} {
		changed, err := Write(target, step.addrs)
		if err != nil || changed != step.want {
			t.Errorf("write #%d of %s: changed %v (%v), want %v", i+1, step.addrs[0].Address, changed, err, step.want)
		}
	}
}
