package nodecaps

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SysAdmin is CAP_SYS_ADMIN: mount and unmount.
const SysAdmin = unix.CAP_SYS_ADMIN

// KeepOnly drops every capability but keep from the bounding, effective,
// permitted, inheritable and ambient sets of every thread of the process
// and sets no_new_privs (the bounding set only if the process may change
// it: CAP_SETPCAP). It needs a binary built without cgo
// (syscall.AllThreadsSyscall).
func KeepOnly(keep ...uintptr) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	kept := map[uintptr]bool{}
	for _, c := range keep {
		kept[c] = true
	}
	// The bounding set first: dropping from it needs CAP_SETPCAP, which
	// the capset below removes. A process without CAP_SETPCAP (a container
	// that dropped it already) keeps its bounding set: no_new_privs below
	// makes sure no exec gains from it.
	for c := uintptr(0); c <= last; c++ {
		if kept[c] {
			continue
		}
		err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0)
		if errors.Is(err, syscall.EPERM) {
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for c := range kept {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("keep only capabilities %v: %w", keep, err)
	}
	if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

func allThreads(trap, a1, a2, a3 uintptr) error {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	if errno != 0 {
		if errors.Is(errno, syscall.ENOTSUP) {
			return fmt.Errorf("%w (a binary built with cgo cannot change every thread's capabilities: build with CGO_ENABLED=0)", errno)
		}
		return errno
	}
	return nil
}

// lastCap is the highest capability number the kernel knows.
func lastCap() (uintptr, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read the highest capability number: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("read the highest capability number: %q", b)
	}
	return uintptr(n), nil
}
