package nodeloss

import (
	"flag"
	"fmt"
	"time"
)

// Options configure node-loss recovery.
type Options struct {
	// Enabled runs the controller. Off, nothing is detected or released
	// (and the class policy is ignored).
	Enabled bool
	// HandoverTimeout is how long a handed-over Listener waits for a claim
	// of its name (or a pod that will recreate it) before it is deleted.
	HandoverTimeout time.Duration
	// MaxConcurrentReconciles is how many claims are reconciled at once.
	MaxConcurrentReconciles int
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{Enabled: true, HandoverTimeout: 10 * time.Minute, MaxConcurrentReconciles: 2}
}

// BindFlags registers the options as flags, with DefaultOptions as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	*o = DefaultOptions()
	fs.BoolVar(&o.Enabled, "pinned-node-recovery", o.Enabled, "Detect listener volumes pinned to lost nodes and release them as their ListenerClass's pinnedNodeLoss says.")
	fs.DurationVar(&o.HandoverTimeout, "handover-timeout", o.HandoverTimeout, "How long a Listener handed over from a released claim waits for the claim to come back before it is deleted.")
}

func (o Options) validate() error {
	if o.HandoverTimeout <= 0 {
		return fmt.Errorf("handover-timeout must be positive, got %s", o.HandoverTimeout)
	}
	return nil
}
