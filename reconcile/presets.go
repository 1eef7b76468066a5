package reconcile

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=create

// PresetClasses are the ListenerClasses a preset creates.
func PresetClasses(p Preset) []*v1alpha1.ListenerClass {
	class := func(name string, spec v1alpha1.ListenerClassSpec) *v1alpha1.ListenerClass {
		return &v1alpha1.ListenerClass{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{service.LabelManagedBy: v1alpha1.FieldManager}},
			Spec:       spec,
		}
	}
	internal := class("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	unstable := class("external-unstable", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	switch p {
	case PresetEphemeralNodes:
		return []*v1alpha1.ListenerClass{internal, unstable,
			class("external-stable", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer})}
	case PresetStableNodes:
		return []*v1alpha1.ListenerClass{internal, unstable,
			class("external-stable", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true)})}
	}
	return nil
}

// CreatePresets creates the preset's classes that do not exist yet. A class
// that exists is left as it is: an administrator's edits win.
func CreatePresets(ctx context.Context, c client.Client, p Preset) (created []string, err error) {
	for _, class := range PresetClasses(p) {
		err := c.Create(ctx, class, client.FieldOwner(v1alpha1.FieldManager))
		switch {
		case err == nil:
			created = append(created, class.Name)
		case apierrors.IsAlreadyExists(err):
		default:
			return created, fmt.Errorf("create preset listener class %s: %w", class.Name, err)
		}
	}
	return created, nil
}

// presetCreator creates the preset classes once the manager is leader.
type presetCreator struct {
	client client.Client
	preset Preset
}

// NeedLeaderElection keeps replicas that are not leader from racing.
func (p *presetCreator) NeedLeaderElection() bool { return true }

// Start creates the presets, retrying while the API server is unavailable,
// and returns: the task is done once.
func (p *presetCreator) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("presets")
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: time.Minute}, func(ctx context.Context) (bool, error) {
		created, err := CreatePresets(ctx, p.client, p.preset)
		if err != nil {
			log.Error(err, "creating listener class presets; will retry", "preset", p.preset)
			return false, nil
		}
		log.Info("listener class presets in place", "preset", p.preset, "created", created)
		return true, nil
	})
	if err != nil && ctx.Err() != nil {
		return nil // shutting down before the API server answered
	}
	return err
}
