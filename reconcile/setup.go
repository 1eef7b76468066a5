package reconcile

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/certificate"
	"github.com/listener-operator/listener-operator/reconcile/claim"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/listener"
	"github.com/listener-operator/listener-operator/reconcile/pod"
	"github.com/listener-operator/listener-operator/reconcile/takeover"
)

// Setup registers one controller with a manager whose cache has the
// indexes of lookup.AddIndexes; recorder is the operator's event recorder.
type Setup func(mgr ctrl.Manager, opts Options, recorder events.EventRecorder) error

// controllers are the leader's controllers, by name, in the order they are
// registered.
var controllers = []struct {
	Name  string
	Setup Setup
}{
	{listener.ControllerName, listener.Setup},
	{takeover.ControllerName, takeover.Setup},
	{claim.ControllerName, claim.Setup},
	{pod.ControllerName, pod.Setup},
	{certificate.ControllerName, certificate.Setup},
}

// SetupWithManager registers the controllers, their cache indexes and the
// preset task with mgr. The controllers and the presets run on the leader
// only.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("reconcile options: %w", err)
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	if err := lookup.AddIndexes(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder(v1alpha1.FieldManager)
	for _, c := range controllers {
		if err := c.Setup(mgr, opts, recorder); err != nil {
			return fmt.Errorf("set up %s controller: %w", c.Name, err)
		}
	}
	if err := mgr.Add(&presetCreator{client: mgr.GetClient(), preset: opts.Preset}); err != nil {
		return fmt.Errorf("add listener class presets: %w", err)
	}
	return nil
}
