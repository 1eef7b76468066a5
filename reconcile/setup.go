package reconcile

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/reconcile/certificate"
	"github.com/listener-operator/listener-operator/reconcile/claim"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/listener"
	"github.com/listener-operator/listener-operator/reconcile/nodeloss"
	"github.com/listener-operator/listener-operator/reconcile/pod"
	"github.com/listener-operator/listener-operator/reconcile/provision"
	"github.com/listener-operator/listener-operator/reconcile/takeover"
)

// Setup registers one controller with a manager whose cache has the
// indexes of lookup.AddIndexes; recorder is the operator's event recorder.
type Setup func(mgr ctrl.Manager, opts Options, recorder events.EventRecorder) error

// Controller is one controller the leader runs.
type Controller struct {
	// Name names it in metrics, logs and traces (what Options.Wrap is
	// given).
	Name  string
	Setup Setup
	// Enabled says whether opts run it; nil runs it always.
	Enabled func(Options) bool
}

// Controllers is the registry: every controller the leader runs, in the
// order they are registered. cmd/ runs them through SetupWithManager and
// the tests through the same function; nothing else sets one up
// (registry_test.go checks both).
func Controllers() []Controller {
	return []Controller{
		{Name: listener.ControllerName, Setup: listener.Setup},
		{Name: takeover.ControllerName, Setup: takeover.Setup},
		{Name: claim.ControllerName, Setup: claim.Setup},
		{Name: pod.ControllerName, Setup: pod.Setup},
		{Name: certificate.ControllerName, Setup: certificate.Setup},
		{Name: nodeloss.ControllerName, Setup: nodeloss.Setup, Enabled: func(o Options) bool { return o.NodeLoss.Enabled }},
		{Name: provision.ControllerName, Setup: provision.Setup, Enabled: func(o Options) bool { return o.Provision.Enabled }},
	}
}

// SetupWithManager registers with mgr (the reconcilers' view of the
// manager, caches.ReconcilerView) everything the leader runs: the cache
// indexes, once; every controller of Controllers that opts enables,
// recording events with recorder; and the preset task.
func SetupWithManager(mgr ctrl.Manager, opts Options, recorder events.EventRecorder) error {
	if err := setup(mgr, opts, recorder, Controllers()); err != nil {
		return err
	}
	if err := mgr.Add(&presetCreator{client: mgr.GetClient(), preset: opts.Preset}); err != nil {
		return fmt.Errorf("add listener class presets: %w", err)
	}
	return nil
}

// SetupOnly is SetupWithManager for the named controllers of the registry
// alone (if opts enables them), without the presets: the tests of one
// controller run it so, with the same indexes.
func SetupOnly(mgr ctrl.Manager, opts Options, recorder events.EventRecorder, names ...string) error {
	var only []Controller
	for _, name := range names {
		i := slices.IndexFunc(Controllers(), func(c Controller) bool { return c.Name == name })
		if i < 0 {
			return fmt.Errorf("no controller %q in the registry", name)
		}
		only = append(only, Controllers()[i])
	}
	return setup(mgr, opts, recorder, only)
}

// setup validates opts, registers the indexes and sets up cs.
func setup(mgr ctrl.Manager, opts Options, recorder events.EventRecorder, cs []Controller) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("reconcile options: %w", err)
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	// At setup, before anything runs: the informers this creates start
	// with the caches.
	if err := lookup.AddIndexes(context.Background(), mgr.GetCache()); err != nil {
		return fmt.Errorf("reconcilers' indexes: %w", err)
	}
	for _, c := range cs {
		if c.Enabled != nil && !c.Enabled(opts) {
			continue
		}
		if err := c.Setup(mgr, opts, recorder); err != nil {
			return fmt.Errorf("set up %s controller: %w", c.Name, err)
		}
	}
	return nil
}
