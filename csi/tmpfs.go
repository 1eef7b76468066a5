package csi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// A sealed volume is a tmpfs of its own, mounted by the node plugin at the
// publish target: whatever a pod writes into its listener volume lands in
// that tmpfs, never on the node's disk, and is bounded by these limits. An
// address tree takes 4 KiB pages per file on tmpfs: a pod with 8
// addresses of 16 ports each (far more than any listener has) needs
// ~150 inodes and ~550 KiB, within both caps (see docs/csi.md).
const (
	// VolumeSizeLimit is the most a sealed volume holds, in bytes.
	VolumeSizeLimit = 1 << 20
	// VolumeInodeLimit is the most files, directories and symlinks a
	// sealed volume holds.
	VolumeInodeLimit = 1000

	// mountSource names the tmpfs in /proc/mounts, so that a sealed
	// volume is told apart from every other tmpfs on the node.
	mountSource = v1alpha1.DriverName
	// sealFlags are on every sealed mount: nothing in it runs, is setuid
	// or opens a device.
	sealFlags = unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV
	// maxStackedMounts bounds how many mounts unmountSealed takes off one
	// target (only a bug could stack more than one).
	maxStackedMounts = 4
)

// sealOptions are the tmpfs options of a sealed volume: the caps, and
// the root directory owned by root and readable by everyone (the files are
// addresses; fsGroupPolicy is None).
func sealOptions() string {
	return fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755,uid=0,gid=0", VolumeSizeLimit, VolumeInodeLimit)
}

// mountState is what is at a publish target.
type mountState int

const (
	// targetMissing: nothing at the path.
	targetMissing mountState = iota
	// targetPlain: a directory on the parent's filesystem (no mount).
	targetPlain
	// targetSealed: a sealed tmpfs is mounted there.
	targetSealed
	// targetForeign: something else is mounted there.
	targetForeign
)

// inspectTarget says what is at target, without reading its contents: a
// mount point has another device than its parent, and a sealed one is a
// tmpfs. It also reports whether a sealed mount is read-only.
func inspectTarget(target string) (state mountState, readOnly bool, err error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(target, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return targetMissing, false, nil
		}
		return 0, false, fmt.Errorf("inspect target %s: %w", target, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, false, fmt.Errorf("target %s is not a directory", target)
	}
	if err := unix.Stat(filepath.Dir(target), &parent); err != nil {
		return 0, false, fmt.Errorf("inspect the parent of target %s: %w", target, err)
	}
	if st.Dev == parent.Dev {
		return targetPlain, false, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(target, &sfs); err != nil {
		return 0, false, fmt.Errorf("inspect the mount at %s: %w", target, err)
	}
	if sfs.Type != unix.TMPFS_MAGIC {
		return targetForeign, false, nil
	}
	return targetSealed, sfs.Flags&unix.ST_RDONLY != 0, nil
}

// isEmptyDir reports whether dir has no entries, reading at most one.
func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// mountSealed mounts a fresh, writable sealed tmpfs on target.
func mountSealed(target string) error {
	if err := unix.Mount(mountSource, target, "tmpfs", sealFlags, sealOptions()); err != nil {
		return fmt.Errorf("mount a %d KiB tmpfs on %s: %w", VolumeSizeLimit>>10, target, err)
	}
	return nil
}

// remountSealed makes the sealed tmpfs at target read-only or writable.
// It changes the filesystem, so every mount of it follows, except where
// the mount itself is read-only (kubelet makes the container's mount
// read-only when the pod asks for readOnly).
func remountSealed(target string, readOnly bool) error {
	flags := uintptr(unix.MS_REMOUNT | sealFlags)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount(mountSource, target, "tmpfs", flags, sealOptions()); err != nil {
		return fmt.Errorf("remount %s (read-only: %t): %w", target, readOnly, err)
	}
	return nil
}

// unmountSealed takes the sealed tmpfs (if any) off target. A mount still
// in use is detached: it goes once the last user has let go. Any other
// mount at target is refused: its contents are not ours to remove.
func unmountSealed(target string) error {
	for range maxStackedMounts {
		state, _, err := inspectTarget(target)
		if err != nil {
			return err
		}
		switch state {
		case targetMissing, targetPlain:
			return nil
		case targetForeign:
			return fmt.Errorf("target %s is a mount point of something other than a listener volume: refusing to unmount or remove it", target)
		}
		if err := unix.Unmount(target, 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("unmount %s: %w", target, err)
			}
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("detach %s: %w", target, err)
			}
		}
	}
	return fmt.Errorf("target %s still has mounts after %d unmounts", target, maxStackedMounts)
}

// sealedMount is a sealed volume found in the mount table.
type sealedMount struct {
	// Target is the mount point.
	Target string
	// PodUID is the pod the kubelet path belongs to
	// (<kubelet>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount).
	PodUID string
}

// sealedMounts lists the sealed volumes under the directory under in a
// mount table (/proc/self/mountinfo), one line at a time.
func sealedMounts(mountinfo io.Reader, under string) ([]sealedMount, error) {
	under = filepath.Clean(under)
	var out []sealedMount
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		// 36 35 98:0 / /mnt/x rw,noexec shared:1 - tmpfs listeners.stackable.tech rw,size=1024k
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 2 || tail[0] != "tmpfs" || tail[1] != mountSource {
			continue
		}
		target := unescapeMountinfo(fields[4])
		if under != "/" && !strings.HasPrefix(target, under+"/") {
			continue
		}
		if uid, ok := podOfTarget(target); ok {
			out = append(out, sealedMount{Target: target, PodUID: uid})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	return out, nil
}

// podOfTarget returns the pod UID of a kubelet CSI publish target
// (…/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount).
func podOfTarget(target string) (string, bool) {
	uid, _, ok := splitTarget(target)
	return uid, ok
}

// podsDirOf returns kubelet's pods directory (…/pods) of a publish target.
func podsDirOf(target string) (string, bool) {
	_, dir, ok := splitTarget(target)
	return dir, ok
}

func splitTarget(target string) (uid, podsDir string, ok bool) {
	parts := strings.Split(filepath.Clean(target), "/")
	n := len(parts)
	if n < 7 || parts[n-1] != "mount" || parts[n-3] != "kubernetes.io~csi" || parts[n-4] != "volumes" || parts[n-6] != "pods" || parts[n-5] == "" || parts[n-2] == "" {
		return "", "", false
	}
	return parts[n-5], strings.Join(parts[:n-5], "/"), true
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134) in a mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// removeTarget unmounts a sealed volume and removes the target directory.
// A missing target is fine.
func removeTarget(target string) error {
	if err := unmountSealed(target); err != nil {
		return err
	}
	if err := os.RemoveAll(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", target, err)
	}
	return nil
}
