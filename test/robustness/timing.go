package robustness

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// phases are the parts of an operation Run times, in order.
var phases = []string{"apply", "pods", "settle", "check", "quiet"}

// Timing adds up where the histories' time goes, by phase of an operation
// (phases), so that a cut of the budget is measured, not guessed.
type Timing struct {
	mu    sync.Mutex
	ops   int
	total map[string]time.Duration
}

// add counts d for phase; an operation is counted at its first phase.
func (t *Timing) add(phase string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total == nil {
		t.total = map[string]time.Duration{}
	}
	if phase == phases[0] {
		t.ops++
	}
	t.total[phase] += d
}

// since counts the time since start for phase and returns now.
func (t *Timing) since(phase string, start time.Time) time.Time {
	now := time.Now()
	t.add(phase, now.Sub(start))
	return now
}

// String is the total and per-operation mean of each phase.
func (t *Timing) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ops == 0 {
		return "no operations"
	}
	var sum time.Duration
	parts := make([]string, 0, len(phases))
	for _, p := range phases {
		sum += t.total[p]
		parts = append(parts, fmt.Sprintf("%s %s (%s/op)", p, t.total[p].Round(time.Millisecond*100), (t.total[p]/time.Duration(t.ops)).Round(time.Millisecond)))
	}
	return fmt.Sprintf("%d operations in %s: %s", t.ops, sum.Round(time.Second), strings.Join(parts, ", "))
}
