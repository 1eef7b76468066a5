package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/testr"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// requireRoot skips a test that mounts: only root (CAP_SYS_ADMIN) may.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sealed volumes are tmpfs mounts, and mounting needs root (CAP_SYS_ADMIN): run the tests as root to cover them")
	}
}

// sealedTarget is a publish target under a fresh temporary directory that
// is unmounted again before the directory is removed.
func sealedTarget(t *testing.T) string {
	t.Helper()
	target := filepath.Join(t.TempDir(), "mount")
	t.Cleanup(func() { // runs before TempDir's removal
		if err := unmountSealed(target); err != nil {
			t.Errorf("unmount %s after the test: %v", target, err)
		}
	})
	return target
}

func publishRO(d *driver, volumeID, target string, vctx map[string]string, readOnly bool) error {
	_, err := d.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: volumeID, TargetPath: target, VolumeCapability: mountCap(), VolumeContext: vctx, Readonly: readOnly,
	})
	return err
}

// mountsAt counts the mounts at target in this process's mount table.
func mountsAt(t *testing.T, target string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && unescapeMountinfo(f[4]) == target {
			n++
		}
	}
	return n
}

// fill writes files of size bytes into dir until the write fails, and
// returns that error and how many bytes landed.
func fill(dir string, files, size int) (int, error) {
	buf := make([]byte, size)
	total := 0
	for i := range files {
		n, err := writeSome(filepath.Join(dir, fmt.Sprintf("junk-%d", i)), buf)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func writeSome(path string, buf []byte) (int, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// TestSealedVolumeCapsWhatAPodWrites: a published volume is a tmpfs of its
// own (noexec, nosuid, nodev); a pod that writes into it hits the size or
// the entry cap, never the node's disk, and the tree stays readable and is
// repaired by the next publish. Unpublish leaves no mount and no target.
func TestSealedVolumeCapsWhatAPodWrites(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "web.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	vctx := f.volumeContext("web", "web")

	tests := []struct {
		name    string
		files   int
		size    int
		wantErr error
	}{
		{"256 MiB in one file stops at the size cap", 1, 256 << 20, unix.ENOSPC},
		{"100,000 empty files stop at the entry cap", 100_000, 0, unix.ENOSPC},
		{"4 KiB files stop at the size cap", 100_000, 4 << 10, unix.ENOSPC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := sealedTarget(t)
			if err := publishRO(d, "vol-web", target, vctx, false); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
			var st unix.Statfs_t
			if err := unix.Statfs(target, &st); err != nil {
				t.Fatal(err)
			}
			if st.Type != unix.TMPFS_MAGIC {
				t.Fatalf("the target is not a tmpfs (type %#x)", st.Type)
			}
			if size := uint64(st.Blocks) * uint64(st.Bsize); size != VolumeSizeLimit {
				t.Errorf("tmpfs size = %d bytes, want %d", size, VolumeSizeLimit)
			}
			if st.Files != VolumeInodeLimit {
				t.Errorf("tmpfs inodes = %d, want %d", st.Files, VolumeInodeLimit)
			}
			for flag, name := range map[int64]string{unix.ST_NOEXEC: "noexec", unix.ST_NOSUID: "nosuid", unix.ST_NODEV: "nodev"} {
				if st.Flags&flag == 0 {
					t.Errorf("the mount is not %s (flags %#x)", name, st.Flags)
				}
			}

			written, err := fill(target, tt.files, tt.size)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("writing into the volume: %v after %d bytes, want %v", err, written, tt.wantErr)
			}
			if written > VolumeSizeLimit {
				t.Errorf("%d bytes landed in the volume, more than its %d", written, VolumeSizeLimit)
			}
			if got := readFile(t, filepath.Join(target, "default-address/address")); got != "web.example.com" {
				t.Errorf("the full volume shows default-address/address = %q", got)
			}
			// The republish is not disturbed by a full volume.
			if err := publishRO(d, "vol-web", target, vctx, false); err != nil {
				t.Errorf("republish of a full volume: %v", err)
			}
			if n := mountsAt(t, target); n != 1 {
				t.Errorf("%d mounts at the target after a republish, want 1", n)
			}

			if _, err := d.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-web", TargetPath: target}); err != nil {
				t.Fatalf("NodeUnpublishVolume: %v", err)
			}
			if n := mountsAt(t, target); n != 0 {
				t.Errorf("%d mounts left at the target after unpublish", n)
			}
			if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("target still there after unpublish: %v", err)
			}
		})
	}
}

// TestSealedVolumeTreeIsTheSameAsAPlainOne: sealing changes where the tree
// lives, not what the pod reads: the same files, links and bytes.
func TestSealedVolumeTreeIsTheSameAsAPlainOne(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "web.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080, "admin": 9090}},
		{Address: "10.96.0.10", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 8080, "admin": 9090}},
	}})
	// Both caches list the Listener as they start: later writes wait for the sealed one's only.
	plain := f.startDriver(Options{NodeName: f.node})
	sealed := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	vctx := f.volumeContext("web", "web")
	a, b := filepath.Join(t.TempDir(), "mount"), sealedTarget(t)
	if err := publishRO(plain, "vol-web", a, vctx, false); err != nil {
		t.Fatal(err)
	}
	if err := publishRO(sealed, "vol-web", b, vctx, false); err != nil {
		t.Fatal(err)
	}
	if ta, tb := podView(t, a), podView(t, b); ta != tb {
		t.Errorf("the sealed tree differs from the plain one:\nplain:\n%s\nsealed:\n%s", ta, tb)
	}
}

// podView lists what a pod reads under dir, following the visible links:
// each file with its content, in order.
func podView(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, top := range []string{"default-address", "addresses"} {
		err := filepath.WalkDir(filepath.Join(dir, top)+"/", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if d.IsDir() {
				fmt.Fprintf(&b, "%s/\n", rel)
				return nil
			}
			fmt.Fprintf(&b, "%s = %q\n", rel, readFile(t, p))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestSealedVolumeReadOnly: a pod that asks for a read-only volume gets a
// read-only tmpfs; the plugin still republishes a changed Listener into it.
func TestSealedVolumeReadOnly(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	l := f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "old.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	vctx := f.volumeContext("web", "web")
	target := sealedTarget(t)
	if err := publishRO(d, "vol-web", target, vctx, true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "junk"), []byte("x"), 0o644); !errors.Is(err, unix.EROFS) {
		t.Errorf("writing into a read-only volume: %v, want %v", err, unix.EROFS)
	}
	f.setStatus(l, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "new.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	if err := publishRO(d, "vol-web", target, vctx, true); err != nil {
		t.Fatalf("republish: %v", err)
	}
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "new.example.com" {
		t.Errorf("after republish default-address/address = %q", got)
	}
	if err := os.WriteFile(filepath.Join(target, "junk"), []byte("x"), 0o644); !errors.Is(err, unix.EROFS) {
		t.Errorf("writing after the republish: %v, want %v", err, unix.EROFS)
	}
}

// TestSealedPluginKeepsTreesPublishedBeforeIt: a volume published by a
// plugin that wrote plain directories (before an upgrade) stays plain
// until its pod goes (the running pod sees that directory, not a mount
// made over it later) and still follows its Listener; a failed first
// publish leaves neither a mount nor a target.
func TestSealedPluginKeepsTreesPublishedBeforeIt(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	l := f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "old.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	// Both caches list the Listener as they start: later writes wait for the sealed one's only.
	plain := f.startDriver(Options{NodeName: f.node})
	sealed := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	vctx := f.volumeContext("web", "web")
	target := sealedTarget(t)
	if err := publishRO(plain, "vol-web", target, vctx, false); err != nil {
		t.Fatal(err)
	}
	f.setStatus(l, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "new.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	if err := publishRO(sealed, "vol-web", target, vctx, false); err != nil {
		t.Fatalf("republish by the sealing plugin: %v", err)
	}
	if n := mountsAt(t, target); n != 0 {
		t.Errorf("%d mounts over a tree published before sealing, want 0", n)
	}
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "new.example.com" {
		t.Errorf("default-address/address = %q", got)
	}

	missing := sealedTarget(t)
	err := publishRO(sealed, "vol-missing", missing, f.volumeContext("web", "no-such-listener"), false)
	wantCode(t, err, codes.Unavailable)
	if n := mountsAt(t, missing); n != 0 {
		t.Errorf("%d mounts left by a failed first publish", n)
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("target left by a failed first publish: %v", err)
	}
}

// TestStaleMounts: a sealed volume whose pod is not on the node in two
// sweeps in a row is stale; a pod seen again clears the suspicion.
func TestStaleMounts(t *testing.T) {
	m := func(uid string) sealedMount {
		return sealedMount{Target: "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/pvc-1/mount", PodUID: uid}
	}
	tests := []struct {
		name                    string
		mounts                  []sealedMount
		live, suspects          []string
		wantStale, wantSuspects []string
	}{
		{"a pod on the node keeps its mount", []sealedMount{m("a")}, []string{"a"}, nil, nil, nil},
		{"a pod missing once is only suspected", []sealedMount{m("a")}, nil, nil, nil, []string{"a"}},
		{"a pod missing twice is stale", []sealedMount{m("a")}, nil, []string{"a"}, []string{"a"}, nil},
		{"a pod seen again is no longer suspected", []sealedMount{m("a")}, []string{"a"}, []string{"a"}, nil, nil},
		{"a suspect without a mount is forgotten", nil, nil, []string{"a"}, nil, nil},
		{"mixed", []sealedMount{m("a"), m("b"), m("c")}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stale, next := staleMounts(tt.mounts, sets.New(tt.live...), sets.New(tt.suspects...))
			var got []string
			for _, s := range stale {
				got = append(got, s.PodUID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantStale) {
				t.Errorf("stale = %v, want %v", got, tt.wantStale)
			}
			if !next.Equal(sets.New(tt.wantSuspects...)) {
				t.Errorf("suspects = %v, want %v", sets.List(next), tt.wantSuspects)
			}
		})
	}
}

// TestSealedMountsReadsTheMountTable: only tmpfs mounts named after the
// driver at a kubelet CSI target count; escaped paths are decoded.
func TestSealedMountsReadsTheMountTable(t *testing.T) {
	table := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pvc-1/mount rw,nosuid,nodev,noexec shared:2 - tmpfs listeners.stackable.tech rw,size=1024k,nr_inodes=1000
31 22 0:41 / /var/lib/kubelet/pods/uid-2/volumes/kubernetes.io~secret/token rw shared:3 - tmpfs tmpfs rw
32 22 0:42 / /data/kube\040let/pods/uid-3/volumes/kubernetes.io~csi/pvc-3/mount rw shared:4 - tmpfs listeners.stackable.tech rw
33 22 0:43 / /tmp/elsewhere rw shared:5 - tmpfs listeners.stackable.tech rw
34 22 0:44 / /var/lib/kubelet/pods/uid-4/volumes/kubernetes.io~csi/pvc-4/mount rw shared:6 - tmpfs other.csi.driver rw
garbage line
`
	got, err := sealedMounts(strings.NewReader(table), "/")
	if err != nil {
		t.Fatal(err)
	}
	want := []sealedMount{
		{Target: "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pvc-1/mount", PodUID: "uid-1"},
		{Target: "/data/kube let/pods/uid-3/volumes/kubernetes.io~csi/pvc-3/mount", PodUID: "uid-3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sealedMounts = %v, want %v", got, want)
	}
	got, err = sealedMounts(strings.NewReader(table), "/var/lib/kubelet/")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want[:1]) {
		t.Errorf("sealedMounts under /var/lib/kubelet = %v, want %v", got, want[:1])
	}
}

// TestStaleMountSweepUnmountsGonePods: a sealed volume under a kubelet pod
// directory whose pod is not on this node is unmounted and removed on the
// second sweep; the volume of a pod that is there stays.
func TestStaleMountSweepUnmountsGonePods(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "web.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	pod := &corev1.Pod{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: f.pod}, pod); err != nil {
		t.Fatal(err)
	}
	kubelet := t.TempDir()
	target := func(uid string) string {
		dir := filepath.Join(kubelet, "pods", uid, "volumes", "kubernetes.io~csi", "pvc-1")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "mount")
		t.Cleanup(func() { _ = unmountSealed(p) })
		return p
	}
	kept, gone := target(string(pod.UID)), target("00000000-gone")
	for _, p := range []string{kept, gone} {
		if err := publishRO(d, "vol-web", p, f.volumeContext("web", "web"), false); err != nil {
			t.Fatal(err)
		}
	}
	ns := d.server.node
	// Only under this test's directory: the machine may run real clusters.
	suspects, err := ns.sweepStaleMounts(context.Background(), testr.New(t), kubelet, sets.New[string]())
	if err != nil {
		t.Fatal(err)
	}
	if mountsAt(t, gone) != 1 {
		t.Fatal("the first sweep unmounted a volume of a pod it had not missed before")
	}
	if _, err := ns.sweepStaleMounts(context.Background(), testr.New(t), kubelet, suspects); err != nil {
		t.Fatal(err)
	}
	if n := mountsAt(t, gone); n != 0 {
		t.Errorf("%d mounts left of the gone pod's volume after two sweeps", n)
	}
	if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the gone pod's target is still there: %v", err)
	}
	if n := mountsAt(t, kept); n != 1 {
		t.Errorf("the running pod's volume has %d mounts, want 1", n)
	}
}

// TestSealedVolumeFullStopsOnlyItsOwnUpdates: a pod that filled its volume
// keeps its last tree; a changed Listener cannot be published into it, and
// the publish says why.
func TestSealedVolumeFullStopsOnlyItsOwnUpdates(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node, SealVolumes: true})
	l := f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "old.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	vctx := f.volumeContext("web", "web")
	target := sealedTarget(t)
	if err := publishRO(d, "vol-web", target, vctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := fill(target, 1, 2<<20); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling the volume: %v, want ENOSPC", err)
	}
	f.setStatus(l, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "new.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	wantCode(t, publishRO(d, "vol-web", target, vctx, false), codes.Internal, "the volume is full")
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "old.example.com" {
		t.Errorf("default-address/address = %q, want the last tree's", got)
	}
}
