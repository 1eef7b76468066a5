package nodeloss

import (
	"flag"
	"fmt"
	"time"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
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
	// Wrap, if set, wraps each controller's reconciler, given the
	// controller's name (cmd/ adds tracing this way).
	Wrap func(controller string, r crreconcile.Reconciler) crreconcile.Reconciler
}

// wrap applies Wrap, if set, to the reconciler of the named controller.
func (o Options) wrap(controller string, r crreconcile.Reconciler) crreconcile.Reconciler {
	if o.Wrap == nil {
		return r
	}
	return o.Wrap(controller, r)
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
