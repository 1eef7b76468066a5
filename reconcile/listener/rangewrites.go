package listener

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rangeWrites serialises, per class, the Service writes that ask for node
// ports in the class's range (writeInRange), and remembers the node ports
// each was given for rangeGivenTTL. The cache shows a Service a moment
// after it is written; until it does, two Listeners reconciled at once
// could both find a port free, or both find their namespace's share not
// yet used, and a tenant creating many Listeners at once would hold more
// than its share.
type rangeWrites struct {
	mu      sync.Mutex
	classes map[string]*classWrites
}

// classWrites is one class's lock, held across one Listener's reading of
// what is held and its write, and the ports given lately.
type classWrites struct {
	mu    sync.Mutex
	given map[int32]givenPort
}

type givenPort struct {
	listener types.NamespacedName
	at       time.Time
}

// rangeGivenTTL is how long a port given is held from memory: informers
// deliver within milliseconds normally, and the cache holds it then.
const rangeGivenTTL = 10 * time.Second

// lock takes class's lock and returns its record; the caller unlocks
// cw.mu. Records of classes stay (one small map per class with a range).
func (w *rangeWrites) lock(class string) *classWrites {
	w.mu.Lock()
	if w.classes == nil {
		w.classes = map[string]*classWrites{}
	}
	cw := w.classes[class]
	if cw == nil {
		cw = &classWrites{given: map[int32]givenPort{}}
		w.classes[class] = cw
	}
	w.mu.Unlock()
	cw.mu.Lock()
	return cw
}

// holdGiven adds to held (the ports the cache shows held) the ports given
// lately to Listeners other than l, each held by who(its Listener), and
// forgets older ones and the ones the cache shows: it has caught up, and
// once it shows such a port no more, the port was given up (a Service
// deleted), free for a Listener waiting for it (portsfreed.go).
func (cw *classWrites) holdGiven(held map[int32]string, l types.NamespacedName, now time.Time, who func(types.NamespacedName) string) {
	for p, g := range cw.given {
		_, shown := held[p]
		switch {
		case shown || now.Sub(g.at) > rangeGivenTTL:
			delete(cw.given, p)
		case g.listener != l:
			held[p] = who(g.listener)
		}
	}
}

// heldByNamespace is who holds a node port given to l: its namespace
// (api/nodeports counts a namespace's share).
func heldByNamespace(l types.NamespacedName) string { return l.Namespace }

// gave records the node ports of svc, written for Listener l.
func (cw *classWrites) gave(svc *corev1.Service, l types.NamespacedName, now time.Time) {
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			cw.given[p.NodePort] = givenPort{listener: l, at: now}
		}
	}
}

// forget drops the ports given lately to Listener l that svc, its Service
// as just written (nil: it has none now), does not have: l gave them up
// (moved to another class, dropped a port, lost its Service), so they are
// free at once for a Listener waiting for them (portsfreed.go), not only
// after rangeGivenTTL. A port is kept when svc has it as a node port or
// as a port (a sharing range's). Takes each record's lock: not to be
// called while holding one.
func (w *rangeWrites) forget(l types.NamespacedName, svc *corev1.Service) {
	w.mu.Lock()
	records := make([]*classWrites, 0, len(w.classes))
	for _, cw := range w.classes {
		records = append(records, cw)
	}
	w.mu.Unlock()
	has := map[int32]bool{}
	if svc != nil {
		for _, p := range svc.Spec.Ports {
			has[p.NodePort], has[p.Port] = true, true
		}
	}
	for _, cw := range records {
		cw.mu.Lock()
		for p, g := range cw.given {
			if g.listener == l && !has[p] {
				delete(cw.given, p)
			}
		}
		cw.mu.Unlock()
	}
}
