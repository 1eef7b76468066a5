package robustness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// operation is how the runner plays one kind of operation.
type operation struct {
	// tenant: tenant Op.Tenant plays it, impersonated, in its own
	// namespace; the administrator otherwise.
	tenant bool
	// gateway: only a run with Traefik plays it (-robustness.gateway);
	// the fixed seeds of make test need not (Coverage.Unplayed).
	gateway bool
	// fault: the operation changes the cluster, not an object a user
	// reads an answer about (a restart, the webhooks, a quota): its error
	// means the runner cannot go on.
	fault bool
	// restarts: the operator starts anew after it (which must then find
	// nothing to change).
	restarts bool
	// play does op as actor (the administrator's client, or the tenant's).
	play func(ctx context.Context, c *Cluster, actor client.Client, w World, op Op) error
}

// playbook is every kind of operation and how it is played: the list
// of kinds (Coverage.Unplayed), who plays each (isTenantOp) and what it
// does (apply) all read this one table, so a kind added is added once.
// A function, not a variable: the runner's methods it names read it too.
func playbook() map[Kind]operation {
	return map[Kind]operation{
		PutClass:      {play: putClassSlot},
		PutShareClass: {play: putClassSlot}, // share.go
		DeleteClass: {play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Delete(ctx, w.Class(op))
		}},
		DeleteService:  {play: deleteService},
		PutNodeAddress: {play: putNodeAddress}, // pods.go
		PutGateway:     {gateway: true, play: applyGateway},
		DeleteGateway:  {gateway: true, play: applyGateway},

		PutListener:    {tenant: true, play: putListener},
		DeleteListener: {tenant: true, play: deleteListener},
		PutClaim: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Create(ctx, w.Claim(op))
		}},
		DeleteClaim: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Delete(ctx, w.Claim(op))
		}},
		PutPod: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Create(ctx, w.Pod(op))
		}},
		DeletePod: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant]}})
		}},
		PutStatefulSet: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Create(ctx, w.StatefulSet(op))
		}},
		ScaleStatefulSet: {tenant: true, play: scaleStatefulSet},
		DeleteStatefulSet: {tenant: true, play: func(ctx context.Context, _ *Cluster, a client.Client, w World, op Op) error {
			return a.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant]}})
		}},

		RestartOperator: {fault: true, restarts: true, play: func(ctx context.Context, c *Cluster, _ client.Client, _ World, _ Op) error { return c.restart(ctx) }},
		WebhooksOff:     {fault: true, play: func(ctx context.Context, c *Cluster, _ client.Client, _ World, _ Op) error { return c.webhooksOff(ctx) }},
		WebhooksOn:      {fault: true, restarts: true, play: webhooksOnAndRestart},
		PutQuota:        {fault: true, play: applyQuota}, // quota.go
		LiftQuota:       {fault: true, play: applyQuota},
	}
}

// kinds are the kinds of operations, sorted; with the ones only a run
// with Traefik plays when gateway is set.
func kinds(gateway bool) []Kind {
	var out []Kind
	book := playbook()
	for _, k := range slices.Sorted(maps.Keys(book)) {
		if gateway || !book[k].gateway {
			out = append(out, k)
		}
	}
	return out
}

// isTenantOp says whether a tenant does operations of kind k.
func isTenantOp(k Kind) bool { return playbook()[k].tenant }

// apply does op as its actor and returns the API server's answer; an
// error only when the runner cannot go on.
func (c *Cluster) apply(ctx context.Context, w World, op Op) (Answer, error) {
	o, ok := playbook()[op.Kind]
	if !ok {
		return Answer{}, fmt.Errorf("unknown operation kind %q", op.Kind)
	}
	actor := c.Admin
	if o.tenant {
		actor = c.Tenants[op.Tenant]
		c.Warnings[op.Tenant].take()
	}
	err := o.play(ctx, c, actor, w, op)
	if o.fault {
		return Answer{}, err
	}
	a := Answer{}
	if err != nil {
		a.Err = err.Error()
	}
	if o.tenant {
		a.Warnings = c.Warnings[op.Tenant].take()
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "User \"tenant-") {
		return a, fmt.Errorf("tenant RBAC: %w", err) // edit lacks a right: the harness is wrong
	}
	return a, nil
}

func putClassSlot(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	return put(ctx, actor, w.Class(op), func(have, want *v1alpha1.ListenerClass) { have.Spec = want.Spec })
}

func deleteService(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	return actor.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: names.ServiceName(op.Name), Namespace: w.Tenants[op.Tenant]}})
}

func putListener(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	l, err := w.Listener(op)
	if err != nil {
		return err
	}
	return put(ctx, actor, l, func(have, want *v1alpha1.Listener) { have.Labels, have.Spec = want.Labels, want.Spec })
}

func deleteListener(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	return actor.Delete(ctx, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant]}})
}

func scaleStatefulSet(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant]}}
	return actor.Patch(ctx, sts, client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, op.Replicas)))
}

func webhooksOnAndRestart(ctx context.Context, c *Cluster, _ client.Client, _ World, _ Op) error {
	if err := c.webhooksOn(ctx); err != nil {
		return err
	}
	return c.restart(ctx)
}

func applyGateway(ctx context.Context, c *Cluster, _ client.Client, w World, op Op) error {
	return c.applyGateway(ctx, w, op)
}

func applyQuota(ctx context.Context, c *Cluster, _ client.Client, w World, op Op) error {
	return c.applyQuota(ctx, w, op)
}
