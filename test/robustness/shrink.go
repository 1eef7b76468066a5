package robustness

import (
	"context"
	"time"
)

// Replay plays one history in a world of its own and returns how it
// failed (nil: it did not).
type Replay func(ctx context.Context, ops []Op) (*Failure, error)

// Shrink drops operations from f's history while the rest still breaks
// the same promise, one at a time from the last but one back to the first,
// and returns the shortest history found before budget passed (with
// whether it finished). Every candidate is played in a fresh world.
func Shrink(ctx context.Context, f *Failure, replay Replay, budget time.Duration) (*Failure, bool, error) {
	deadline := time.Now().Add(budget)
	best := f
	for i := len(best.Ops) - 2; i >= 0; i-- {
		if time.Now().After(deadline) {
			return best, false, nil
		}
		if i >= len(best.Ops)-1 {
			continue
		}
		candidate := append(append([]Op(nil), best.Ops[:i]...), best.Ops[i+1:]...)
		got, err := replay(ctx, candidate)
		if err != nil {
			return best, false, err
		}
		if got != nil && got.Invariant == f.Invariant {
			got.Seed = f.Seed
			best = got
		}
	}
	return best, true, nil
}
