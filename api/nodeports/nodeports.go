package nodeports

import (
	"fmt"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Ask is what the Service of a Listener asks of its class's node port
// range.
type Ask struct {
	// Class is the class's name, Range its range (and share).
	Class string
	Range v1alpha1.NodePortRange
	// Namespace is the Listener's namespace.
	Namespace string
	// Ports are the names of the Listener's ports that need a node port,
	// in spec.ports order.
	Ports []string
	// Replica is the StatefulSet ordinal the Listener serves
	// (claims.Replica), -1 when none.
	Replica int
	// Held are the node ports that are not free, each with the namespace
	// of the Listener that holds it; "" when it counts for no namespace's
	// share (another Service has it: the API server refused it; or the
	// Listener's own Service drops it with this write).
	Held map[int32]string
}

// Exhausted says that a range has too few free node ports for a Listener.
// It names no namespace but the Listener's own.
type Exhausted struct {
	Class string
	Range v1alpha1.NodePortRange
	// Used is how many ports of the range are held, Own how many of them
	// the Listener's namespace holds; Wanted how many this one needs.
	Used, Own, Wanted int
}

func (e *Exhausted) Error() string {
	return fmt.Sprintf("node port range %s of ListenerClass %s is exhausted: %d of its %d ports are in use (%d of them by this namespace's Listeners) and this Listener needs %d; widen spec.nodePortRange of the class, or delete Listeners of it that are no longer used",
		e.Range, e.Class, e.Used, e.Range.Size(), e.Own, e.Wanted)
}

// ShareExceeded says that a Listener needs more node ports than its
// namespace has left of the range's share (spec.nodePortRange.perNamespace).
type ShareExceeded struct {
	Class     string
	Range     v1alpha1.NodePortRange
	Namespace string
	// Held is how many ports of the range the namespace holds, Wanted how
	// many more this Listener needs.
	Held, Wanted int
}

func (e *ShareExceeded) Error() string {
	return fmt.Sprintf("namespace %s holds %d of the %d node ports of range %s that ListenerClass %s allows one namespace (spec.nodePortRange.perNamespace), and this Listener needs %d more; delete Listeners of the class in this namespace that are no longer used, or ask the cluster administrator to raise perNamespace",
		e.Namespace, e.Held, *e.Range.PerNamespace, e.Range, e.Class, e.Wanted)
}

// NodePorts is the node port each of a.Ports asks for:
//
//   - replica i ≥ 0 (claims.Replica) wants from + i×n + j for its port j, n ports
//     a replica; a wanted port that is held, or beyond the range, goes to
//     the next free port of the range (from the start again after its end);
//   - any other Listener (replica < 0, a bootstrap the replicas share)
//     takes the last block of n free ports, aligned at from + k×n, else
//     the last n free ports of the range: the replicas' blocks come
//     first, so it does not sit on one, whichever is made first, and
//     sits on the last replicas' before the first's.
//
// The error is a *ShareExceeded when the namespace's share of the range
// has fewer than n ports left, an *Exhausted when the range has fewer than
// n free ports. No port held is ever given: a full range takes nothing
// from anyone.
func (a *Ask) NodePorts() (map[string]int32, error) {
	r, n := a.Range, len(a.Ports)
	if n == 0 {
		return nil, nil
	}
	used, own := 0, 0
	for p, ns := range a.Held {
		if r.Contains(p) {
			used++
			if ns == a.Namespace {
				own++
			}
		}
	}
	if r.PerNamespace != nil && own+n > int(*r.PerNamespace) {
		return nil, &ShareExceeded{Class: a.Class, Range: r, Namespace: a.Namespace, Held: own, Wanted: n}
	}
	if r.Size()-used < n {
		return nil, &Exhausted{Class: a.Class, Range: r, Used: used, Own: own, Wanted: n}
	}
	out := make(map[string]int32, n)
	if a.Replica < 0 {
		for j, p := range shared(r, n, a.Held) {
			out[a.Ports[j]] = p
		}
		return out, nil
	}
	taken := make(map[int32]bool, len(a.Held)+n)
	for p := range a.Held {
		taken[p] = true
	}
	for j, name := range a.Ports {
		p := nextFree(r, int64(a.Replica*n)+int64(j), taken)
		taken[p] = true
		out[name] = p
	}
	return out, nil
}

// shared are the n ports of a Listener that is no replica's, ascending:
// the last aligned block of n ports that are all free, else the last n
// free ports of the range (the caller has checked that there are n). From
// the end either way: the replicas' blocks come first, and a replica
// keeps its ports as long as a port behind the replicas is free.
func shared(r v1alpha1.NodePortRange, n int, held map[int32]string) []int32 {
	for off := (r.Size()/n - 1) * n; off >= 0; off -= n {
		free := true
		for j := range n {
			if _, h := held[r.From+int32(off+j)]; h {
				free = false
				break
			}
		}
		if free {
			out := make([]int32, n)
			for j := range out {
				out[j] = r.From + int32(off+j)
			}
			return out
		}
	}
	out := make([]int32, n)
	k := n
	for p := r.To; k > 0 && p >= r.From; p-- {
		if _, h := held[p]; !h {
			k--
			out[k] = p
		}
	}
	return out
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
