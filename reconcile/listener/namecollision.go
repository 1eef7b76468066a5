package listener

import (
	"context"
	"fmt"

	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// Names that collide (issue 37, case 6). A Listener whose name does not fit
// a Service name or a label key gets a shortened one, "<prefix>-<10 hex>"
// (api/names), and another Listener may be named exactly that: its Service
// would select the first one's pods, or find the first one's Service. The
// webhooks refuse the later one at creation (validation.NameCollisions);
// one let in while they were down is judged here by the same function:
// the later Listener (newer creationTimestamp, ties broken by name) is
// Invalid and has no Service, the first keeps its own.

// sameNames are the other Listeners of the namespace that may share l's
// Service name or pod selector label: those the indexes file under them,
// and those named like them. validation.NameCollisions decides.
func sameNames(ctx context.Context, c client.Reader, namespace, name string) ([]v1alpha1.Listener, error) {
	svc := names.ServiceName(name)
	label := lookup.PodLabelName(name)
	var out []v1alpha1.Listener
	for _, q := range []client.MatchingFields{{lookup.IndexListenerServiceName: svc}, {lookup.IndexListenerPodLabel: label}} {
		var list v1alpha1.ListenerList
		if err := c.List(ctx, &list, client.InNamespace(namespace), q); err != nil {
			return nil, fmt.Errorf("list listeners of namespace %s by name: %w", namespace, err)
		}
		out = append(out, list.Items...)
	}
	for _, other := range []string{svc, label} {
		if other == name {
			continue
		}
		l := &v1alpha1.Listener{}
		switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: other}, l); {
		case err == nil:
			out = append(out, *l)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get listener %s/%s: %w", namespace, other, err)
		}
	}
	return out, nil
}

// nameCollision is the verdict on l when its name collides with that of a
// Listener made before it (validation.NameCollisions), none when it does
// not.
func nameCollision(ctx context.Context, c client.Reader, l *v1alpha1.Listener) (verdict, error) {
	others, err := sameNames(ctx, c, l.Namespace, l.Name)
	if err != nil {
		return verdict{}, err
	}
	var earlier []string
	for i := range others {
		if o := &others[i]; o.Name != l.Name && before(o, l) {
			earlier = append(earlier, o.Name)
		}
	}
	errs := validation.NameCollisions(l.Name, earlier, field.NewPath("metadata", "name"))
	if len(errs) == 0 {
		return verdict{}, nil
	}
	return verdict{reason: v1alpha1.ReasonInvalid, unpublish: true, message: fmt.Sprintf(
		"%s (the webhooks refuse such a name; this Listener got in while they were down, so it has no Service: delete it and create it under another name)", errs.ToAggregate().Error())}, nil
}

// refuseCollision ends the reconcile of a Listener whose name collides with
// an earlier one's (nameCollision): its Service would select the other's
// pods, so it has none (deleted if it had one), and it says why. The zero
// outcome: no collision, the reconcile goes on.
func (r *listenerReconciler) refuseCollision(ctx context.Context, l *v1alpha1.Listener) (outcome, error) {
	v, err := nameCollision(ctx, r.client, l)
	if v.none() || err != nil {
		return outcome{}, err
	}
	if err := r.deleteStaleServices(ctx, l, ""); err != nil {
		return outcome{}, err
	}
	return judged(v), nil
}

// before reports whether Listener a was made before b: an older
// creationTimestamp, or the same one (they have seconds) and a smaller name.
func before(a, b *v1alpha1.Listener) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// listenersNamedLike maps a deleted Listener to the later Listeners whose
// names collide with its name: they may get their Service now.
func listenersNamedLike(ctx context.Context, c client.Reader, namespace, name string) []ctrl.Request {
	others, err := sameNames(ctx, c, namespace, name)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list listeners named like a deleted one", "listener", name)
		return nil
	}
	var reqs []ctrl.Request
	for i := range others {
		if o := &others[i]; o.Name != name && len(validation.NameCollisions(o.Name, []string{name}, nil)) > 0 {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	}
	return reqs
}
