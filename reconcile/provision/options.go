package provision

import (
	"flag"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options configure the provisioner.
type Options struct {
	// Enabled runs the controller. Off, csi-provisioner provisions every
	// listener volume (after the scheduler picked a node for its pod).
	Enabled bool
	// MaxConcurrentReconciles is how many claims are provisioned at once.
	MaxConcurrentReconciles int
	// Wrap, if set, wraps the controller's reconciler, given the
	// controller's name (cmd/ adds tracing this way).
	Wrap func(controller string, r crreconcile.Reconciler) crreconcile.Reconciler
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{Enabled: true, MaxConcurrentReconciles: 4}
}

// BindFlags registers the options as flags, with DefaultOptions as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	*o = DefaultOptions()
	fs.BoolVar(&o.Enabled, "provision-volumes", o.Enabled,
		"Create the PersistentVolume of a listener claim as soon as it can be made (for a pinned class, once the scheduler picked a node), instead of waiting for csi-provisioner.")
}

func (o Options) wrap(controller string, r crreconcile.Reconciler) crreconcile.Reconciler {
	if o.Wrap == nil {
		return r
	}
	return o.Wrap(controller, r)
}
