package nodeports

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Exhausted says that a range has too few free node ports for a Listener.
type Exhausted struct {
	Class string
	Range v1alpha1.NodePortRange
	// Used is how many ports of the range other Listeners hold; Wanted how
	// many this one needs.
	Used, Wanted int
}

func (e *Exhausted) Error() string {
	return fmt.Sprintf("node port range %s of ListenerClass %s is exhausted: %d of its %d ports are in use and this Listener needs %d; widen spec.nodePortRange of the class, or delete Listeners of it that are no longer used",
		e.Range, e.Class, e.Used, e.Range.Size(), e.Wanted)
}

// InRange is the node port each of ports (the Listener's port names, in
// spec.ports order) asks for, for a Listener of class with range r:
//
//   - replica i ≥ 0 (Replica) wants from + i×n + j for its port j, n ports
//     a replica; a wanted port that is used, or beyond the range, goes to
//     the next free port of the range (from the start again after its end);
//   - any other Listener (replica < 0) takes the first block of n free
//     ports, aligned at from + k×n, else the first free ports.
//
// used are the node ports other Listeners hold (or the API server refused).
// The error is an *Exhausted when the range has fewer than n free ports.
func InRange(class string, r v1alpha1.NodePortRange, ports []string, replica int, used map[int32]bool) (map[string]int32, error) {
	n := len(ports)
	if n == 0 {
		return nil, nil
	}
	free := 0
	for p := r.From; p <= r.To && p > 0; p++ {
		if !used[p] {
			free++
		}
	}
	if free < n {
		return nil, &Exhausted{Class: class, Range: r, Used: r.Size() - free, Wanted: n}
	}
	start := -1
	if replica >= 0 {
		start = replica * n
	} else {
		start = firstFreeBlock(r, n, used)
	}
	taken := make(map[int32]bool, len(used)+n)
	for p := range used {
		taken[p] = true
	}
	out := make(map[string]int32, n)
	for j, name := range ports {
		p := nextFree(r, int64(start)+int64(j), taken)
		taken[p] = true
		out[name] = p
	}
	return out, nil
}

// firstFreeBlock is the offset of the first aligned block of n ports that
// are all free, else 0 (the ports are then the first free ones).
func firstFreeBlock(r v1alpha1.NodePortRange, n int, used map[int32]bool) int {
	for off := 0; off+n <= r.Size(); off += n {
		ok := true
		for j := range n {
			if used[r.From+int32(off+j)] {
				ok = false
				break
			}
		}
		if ok {
			return off
		}
	}
	return 0
}

// nextFree is the first port not taken at or after offset off of the
// range, wrapping around; the caller has checked that one is free.
func nextFree(r v1alpha1.NodePortRange, off int64, taken map[int32]bool) int32 {
	size := int64(r.Size())
	if off >= size || off < 0 {
		off %= size
	}
	for i := range size {
		p := r.From + int32((off+i)%size)
		if !taken[p] {
			return p
		}
	}
	return r.From
}

// Replica is the StatefulSet ordinal a Listener serves, -1 when it is not
// the per-claim Listener of one StatefulSet replica: the ordinal of the pod
// it selects by name (a claim from an opted-in template), else of the first
// pod mounting its claim whose name is a StatefulSet pod's ("<sts>-<i>";
// podNames, sorted), else the one its claim's name ends in (a
// volumeClaimTemplate's claim "<template>-<pod>", made before its pod). A
// name is only a hint of which block a Listener wants: a range is meant for
// one workload, and its ports are first come, first served.
func Replica(l *v1alpha1.Listener, podNames []string) int {
	if pod := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; pod != "" {
		return ordinal(pod)
	}
	for _, pod := range podNames {
		if i := ordinal(pod); i >= 0 {
			return i
		}
	}
	if ref := metav1.GetControllerOf(l); ref != nil && ref.Kind == "PersistentVolumeClaim" && ref.APIVersion == "v1" {
		return ordinal(ref.Name)
	}
	return -1
}

// ordinal is the trailing decimal of a StatefulSet pod's name, -1 when it
// has none.
func ordinal(name string) int {
	if claims.StatefulSetOfPod(name) == "" {
		return -1
	}
	i, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	if err != nil || i > 1<<20 {
		return -1
	}
	return i
}
