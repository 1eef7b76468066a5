package addresstree

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestWriteRepairsWhatAPodPutInItsVolume: a container may mount its listener
// volume read-write and put anything in it. The next Write neither blocks
// (a FIFO), nor reads a huge file, nor follows a link out of the volume, and
// leaves the tree the pod reads correct.
func TestWriteRepairsWhatAPodPutInItsVolume(t *testing.T) {
	addrs := []v1alpha1.ListenerIngress{{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 31080}}}
	// gen is the current generation directory behind ..data.
	gen := func(t *testing.T, target string) string {
		g, err := os.Readlink(filepath.Join(target, dataLink))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(target, g)
	}
	replace := func(t *testing.T, path string, with func(string) error) {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := with(path); err != nil {
			t.Fatalf("plant %s: %v", path, err)
		}
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	dir := func(p string) error { return os.MkdirAll(filepath.Join(p, "sub"), 0o755) }
	huge := func(p string) error { // 1 GiB, sparse: costs no disk
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(1 << 30)
	}
	toEtc := func(p string) error { return os.Symlink("/etc", p) }
	tests := []struct {
		name  string
		plant func(t *testing.T, target string)
	}{
		{"a FIFO instead of a port file", func(t *testing.T, target string) {
			replace(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/ports/http"), fifo)
		}},
		{"a FIFO instead of the address file", func(t *testing.T, target string) {
			replace(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/address"), fifo)
		}},
		{"a 1 GiB file instead of the address file", func(t *testing.T, target string) {
			replace(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/address"), huge)
		}},
		{"a directory where a file was", func(t *testing.T, target string) {
			replace(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/ports/http"), dir)
		}},
		{"a symlink to /etc instead of default-address", func(t *testing.T, target string) {
			replace(t, filepath.Join(target, DefaultAddress), toEtc)
		}},
		{"a symlink to /etc instead of a port file", func(t *testing.T, target string) {
			replace(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/ports/http"), func(p string) error { return os.Symlink("/etc/passwd", p) })
		}},
		{"a symlink to /etc instead of ..data", func(t *testing.T, target string) {
			replace(t, filepath.Join(target, dataLink), toEtc)
		}},
		{"a directory instead of ..data", func(t *testing.T, target string) {
			replace(t, filepath.Join(target, dataLink), dir)
		}},
		{"5,000 files next to the port files and 500 hidden directories at the top", func(t *testing.T, target string) {
			many(t, filepath.Join(gen(t, target), "addresses/10.0.0.7/ports"), "extra-%d", 5000, false)
			many(t, target, "..stale%d", 500, true)
		}},
		{"a FIFO instead of addresses and a directory at ..data_tmp", func(t *testing.T, target string) {
			replace(t, filepath.Join(target, AddressesDir), fifo)
			replace(t, filepath.Join(target, dataLinkTmp), dir)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := t.TempDir()
			if _, err := Write(target, addrs); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, target)
			done := make(chan error, 1)
			go func() {
				_, err := Write(target, addrs)
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Write after the pod's meddling: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Write blocked on what the pod put in its volume")
			}
			if got := read(t, filepath.Join(target, "default-address/address")); got != "10.0.0.7" {
				t.Errorf("default-address/address = %q", got)
			}
			if got := read(t, filepath.Join(target, "default-address/ports/http")); got != "31080" {
				t.Errorf("default-address/ports/http = %q", got)
			}
			if extra, _ := filepath.Glob(filepath.Join(target, "..stale*")); len(extra) > 0 {
				t.Errorf("%d hidden directories left at the top, e.g. %s", len(extra), extra[0])
			}
			// And it stays repaired: the next Write has nothing to do.
			if changed, err := Write(target, addrs); err != nil || changed {
				t.Errorf("Write of the repaired tree: changed %v, err %v; want nothing to do", changed, err)
			}
		})
	}
}

// many creates n entries named by format in dir: directories or empty files.
func many(t *testing.T, dir, format string, n int, dirs bool) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf(format, i))
		var err error
		if dirs {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadDirBoundedReadsOneEntryTooMany: the compare of a republish reads
// a directory a pod filled for at most one entry more than the tree puts
// there, however many there are.
func TestReadDirBoundedReadsOneEntryTooMany(t *testing.T) {
	dir := t.TempDir()
	many(t, dir, "f%d", 5000, false)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, limit := range []int{0, 3, 4999, 5000} {
		entries, ok := readDirBounded(root, ".", limit)
		wantOK := limit >= 5000
		wantLen := min(limit+1, 5000)
		if ok != wantOK || len(entries) != wantLen {
			t.Errorf("readDirBounded(limit %d) = %d entries, ok %v; want %d, %v", limit, len(entries), ok, wantLen, wantOK)
		}
	}
}
