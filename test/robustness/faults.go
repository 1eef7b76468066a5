package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Faults are what the administrator's fault operations act on: the
// operator's restart (a new manager in the same process) and the webhook
// configurations the API server calls, kept as installed so that they can
// be deleted and made again.
type Faults struct {
	// Restart stops the operator's manager and starts a new one, and
	// returns once it serves and its caches are synced.
	Restart func(ctx context.Context) error
	// Mutating and Validating are the webhook configurations as
	// installed (nil: no faults of the webhooks).
	Mutating   []admissionv1.MutatingWebhookConfiguration
	Validating []admissionv1.ValidatingWebhookConfiguration
	// off says the webhooks are switched off now.
	off bool
	// unchecked says a tenant wrote while the webhooks were off since the
	// operator last started: a claim admitted unmarked then is found by
	// the next start's scan (or the periodic one), so that start writes.
	unchecked bool
}

// catchesUp says whether restarting the operator before op catches up with
// writes admitted while the webhooks were off (RestartWritesNothing does
// not apply), and notes op: a tenant's operation while the webhooks are
// off leaves work for the next start, which a restart does.
func (f *Faults) catchesUp(op Op) bool {
	if f == nil {
		return false
	}
	switch {
	case f.off && isTenantOp(op.Kind):
		f.unchecked = true
	case playbook()[op.Kind].restarts:
		defer func() { f.unchecked = false }()
		return f.unchecked
	}
	return false
}

// KeepWebhooks reads the webhook configurations as installed.
func (f *Faults) KeepWebhooks(ctx context.Context, c client.Reader) error {
	var m admissionv1.MutatingWebhookConfigurationList
	var v admissionv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &m); err != nil {
		return err
	}
	if err := c.List(ctx, &v); err != nil {
		return err
	}
	f.Mutating, f.Validating = m.Items, v.Items
	return nil
}

// webhooksOff deletes the webhook configurations: the API server admits
// every write unchecked and uncompleted until webhooksOn.
func (c *Cluster) webhooksOff(ctx context.Context) error {
	for i := range c.Faults.Mutating {
		if err := client.IgnoreNotFound(c.Admin.Delete(ctx, &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: c.Faults.Mutating[i].Name}})); err != nil {
			return err
		}
	}
	for i := range c.Faults.Validating {
		if err := client.IgnoreNotFound(c.Admin.Delete(ctx, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: c.Faults.Validating[i].Name}})); err != nil {
			return err
		}
	}
	c.Faults.off = true
	return c.awaitWebhooks(ctx, false)
}

// webhooksOn makes the webhook configurations again (nothing when they
// are on) and waits until the API server calls them.
func (c *Cluster) webhooksOn(ctx context.Context) error {
	if !c.Faults.off {
		return nil
	}
	for i := range c.Faults.Mutating {
		o := c.Faults.Mutating[i].DeepCopy()
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Labels: o.Labels, Annotations: o.Annotations}
		if err := c.Admin.Create(ctx, o); err != nil {
			return err
		}
	}
	for i := range c.Faults.Validating {
		o := c.Faults.Validating[i].DeepCopy()
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Labels: o.Labels, Annotations: o.Annotations}
		if err := c.Admin.Create(ctx, o); err != nil {
			return err
		}
	}
	c.Faults.off = false
	return c.awaitWebhooks(ctx, true)
}

// awaitWebhooks waits until the API server calls the webhooks (on) or no
// longer does: until a dry run of a class the class webhook refuses is
// refused, or admitted.
func (c *Cluster) awaitWebhooks(ctx context.Context, on bool) error {
	overrides, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "probe"}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		probe := &v1alpha1.ListenerClass{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "robustness-probe-"},
			Spec:       v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP},
		}
		probe.Spec.ServiceOverrides = &runtime.RawExtension{Raw: overrides}
		err := c.Admin.Create(ctx, probe, client.DryRunAll)
		refused := err != nil && strings.Contains(err.Error(), "metadata.name")
		if err != nil && !refused {
			return fmt.Errorf("probe the webhooks: %w", err)
		}
		if refused == on {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhooks were switched on=%v, but the API server does not act so after 30s", on)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restart restarts the operator.
func (c *Cluster) restart(ctx context.Context) error {
	if c.Faults.Restart == nil {
		return fmt.Errorf("this cluster cannot restart the operator")
	}
	return c.Faults.Restart(ctx)
}
