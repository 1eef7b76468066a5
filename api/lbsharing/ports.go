package lbsharing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Ask is what the Service of a Listener of a sharing class asks of its
// class's range.
type Ask struct {
	// Class is the class's name, Range its spec.loadBalancerSharing.
	Class string
	Range v1alpha1.LoadBalancerSharing
	// Ports are the names of the Listener's ports, in spec.ports order.
	Ports []string
	// Replica is the workload's replica (Workload.Replica).
	Replica int
	// Held are the Service ports the other Services of the Listener's
	// sharing key have, each with the Service's name (all of one
	// namespace: a key never spans two).
	Held map[int32]string
	// Own are the ports the Listener's Service has now under the same key
	// (nil: none yet); ports it has stay where they are.
	Own map[string]int32
}

// Exhausted says that the range has no room for the Listener's ports.
type Exhausted struct {
	Class string
	Range v1alpha1.LoadBalancerSharing
	// Replica, Wanted: the Listener's replica (-1: shared) and its ports.
	Replica, Wanted, Used int
}

func (e *Exhausted) Error() string {
	what := fmt.Sprintf("a Listener the StatefulSet's pods share needs a free block of %d", e.Wanted)
	if e.Replica >= 0 {
		what = fmt.Sprintf("replica %d needs ports %d-%d (from + replica×%d)", e.Replica,
			int(e.Range.From)+e.Replica*e.Wanted, int(e.Range.From)+(e.Replica+1)*e.Wanted-1, e.Wanted)
	}
	return fmt.Sprintf("range %s of ListenerClass %s (spec.loadBalancerSharing) has no room for this Listener: %s, and %d of its %d ports are in use by this workload; widen spec.loadBalancerSharing of the class (the ports in use stay where they are), or scale the workload down",
		e.Range, e.Class, what, e.Used, e.Range.Size())
}

// Taken says that a port the formula gives the Listener is another
// Service's of its key. That Service keeps it.
type Taken struct {
	Class   string
	Port    int32
	Name    string // the Listener's port
	Service string // the Service that holds it
}

func (e *Taken) Error() string {
	return fmt.Sprintf("port %d, which spec.loadBalancerSharing of ListenerClass %s gives this Listener's port %s, is held by Service %s of the same workload, which keeps it; delete that Service's Listener if it is no longer used, or widen the range so that the Listeners the pods share (which take the last free block) leave the replicas' ports free",
		e.Port, e.Class, e.Name, e.Service)
}

// Assign is the Service port of each of a.Ports: the ports a.Own has,
// when every one is in the range and no other Service holds it (a port
// never moves); else, for replica i ≥ 0, from + i×n + j for port j (n
// ports a replica: the nodePortRange rule, so a replica made anew gets its
// ports back); for a shared Listener (replica -1), the last block of n
// ports, aligned at from + k×n, that is all free. The error is an
// *Exhausted or a *Taken; no port held is ever given.
func (a *Ask) Assign() (map[string]int32, error) {
	n := len(a.Ports)
	if n == 0 {
		return nil, nil
	}
	if kept := a.keep(); kept != nil {
		return kept, nil
	}
	out := make(map[string]int32, n)
	if a.Replica >= 0 {
		// A block that does not fit is short of range, whoever holds
		// the part of it inside: deleting the holder would not help.
		if int64(a.Range.From)+int64(a.Replica+1)*int64(n)-1 > int64(a.Range.To) {
			return nil, &Exhausted{Class: a.Class, Range: a.Range, Replica: a.Replica, Wanted: n, Used: a.used()}
		}
		for j, name := range a.Ports {
			p := int64(a.Range.From) + int64(a.Replica)*int64(n) + int64(j)
			if holder, held := a.Held[int32(p)]; held {
				return nil, &Taken{Class: a.Class, Port: int32(p), Name: name, Service: holder}
			}
			out[name] = int32(p)
		}
		return out, nil
	}
	for k := a.Range.Size()/n - 1; k >= 0; k-- {
		start := a.Range.From + int32(k*n)
		if a.free(start, n) {
			for j, name := range a.Ports {
				out[name] = start + int32(j)
			}
			return out, nil
		}
	}
	return nil, &Exhausted{Class: a.Class, Range: a.Range, Replica: -1, Wanted: n, Used: a.used()}
}

// keep is a.Own when it has every port, each in the range and held by no
// other Service; nil otherwise.
func (a *Ask) keep() map[string]int32 {
	if len(a.Own) == 0 {
		return nil
	}
	out := make(map[string]int32, len(a.Ports))
	var seen []int32
	for _, name := range a.Ports {
		p, ok := a.Own[name]
		if _, held := a.Held[p]; !ok || held || !a.Range.Contains(p) || slices.Contains(seen, p) {
			return nil
		}
		seen = append(seen, p)
		out[name] = p
	}
	return out
}

func (a *Ask) free(start int32, n int) bool {
	for j := range n {
		if _, held := a.Held[start+int32(j)]; held {
			return false
		}
	}
	return true
}

func (a *Ask) used() int {
	u := 0
	for p := range a.Held {
		if a.Range.Contains(p) {
			u++
		}
	}
	return u
}

// Describe lists ports as "name=port" in the order of names, for a
// condition message.
func Describe(names []string, ports map[string]int32) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, ports[n]))
	}
	return strings.Join(parts, ", ")
}
