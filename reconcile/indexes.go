package reconcile

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// Cache indexes: every lookup a reconcile or a watch mapping makes goes
// through one of these, never through a list of everything.
const (
	// indexListenerClass: Listeners by spec.className.
	indexListenerClass = "spec.className"
	// indexListenerServiceName: Listeners by status.serviceName, the
	// Service they publish, and by the name their Service gets
	// (names.ServiceName), which a Listener not yet published waits for.
	indexListenerServiceName = "status.serviceName"
	// indexServiceOwner: Services by the name of the Listener that controls them.
	indexServiceOwner = "listener.controller"
	// indexServiceHostname: Services by the DNS names of their external-dns
	// hostname annotation, across namespaces (hostnameconflict.go).
	indexServiceHostname = "service.hostname"
	// indexPodNode: pods by the node they are bound to.
	indexPodNode = "pod.node"
	// indexClaimListener: PersistentVolumeClaims by the Listener they use.
	indexClaimListener = "claim.listener"
	// indexPVNode: PersistentVolumes by the nodes they are pinned to
	// (registered by caches.ReconcilerView, which the pinned-node-loss
	// controller shares).
	indexPVNode = caches.IndexVolumeNode
)

func addIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return caches.AddIndexes(ctx, indexer,
		caches.Index{Object: &v1alpha1.Listener{}, Field: indexListenerClass, Values: func(o client.Object) []string {
			if c := o.(*v1alpha1.Listener).Spec.ClassName; c != nil {
				return []string{*c}
			}
			return nil
		}},
		// Only the names other than the Listener's own: a Listener is found
		// by its own name with a read (listenersOfService).
		caches.Index{Object: &v1alpha1.Listener{}, Field: indexListenerServiceName, Values: func(o client.Object) []string {
			return otherThan(o.GetName(), listenerServiceNames(o.(*v1alpha1.Listener)))
		}},
		// Only shortened labels (namecollision.go).
		caches.Index{Object: &v1alpha1.Listener{}, Field: indexListenerPodLabel, Values: func(o client.Object) []string {
			return shortenedPodLabel(o.GetName())
		}},
		// Only Services under another name than their Listener's Service
		// name (servicesOfListener reads that one by name).
		caches.Index{Object: &corev1.Service{}, Field: indexServiceOwner, Values: func(o client.Object) []string {
			if owner := controlledByListener(o); owner != "" && names.ServiceName(owner) != o.GetName() {
				return []string{owner}
			}
			return nil
		}},
		caches.Index{Object: &corev1.Service{}, Field: indexServiceHostname, Values: func(o client.Object) []string {
			return hostnamesOf(o)
		}},
		caches.Index{Object: &corev1.Pod{}, Field: indexPodNode, Values: func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}},
		// Only claims of a Listener of another name: a per-claim Listener's
		// claim has its name (claimsOfListener reads it by name).
		caches.Index{Object: &corev1.PersistentVolumeClaim{}, Field: indexClaimListener, Values: func(o client.Object) []string {
			if name, ok := claimListener(o.(*corev1.PersistentVolumeClaim)); ok && name != o.GetName() {
				return []string{name}
			}
			return nil
		}},
	)
}

// otherThan is vals without own.
func otherThan(own string, vals []string) []string {
	var out []string
	for _, v := range vals {
		if v != own {
			out = append(out, v)
		}
	}
	return out
}

// listenersOfService maps a Service (or the name of one) to the Listeners
// whose Service it is or would be: the Listener of the same name, read by
// name, and those the index files under another name.
func listenersOfService(ctx context.Context, c client.Reader, namespace, svcName string) []ctrl.Request {
	reqs := requestsFor(ctx, c, &v1alpha1.ListenerList{}, client.InNamespace(namespace), client.MatchingFields{indexListenerServiceName: svcName})
	l := &v1alpha1.Listener{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: svcName}, l); {
	case err == nil:
		if slices.Contains(listenerServiceNames(l), svcName) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(l)})
		}
	case !apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Error(err, "get the listener of a service", "service", svcName)
	}
	return reqs
}

// servicesOfListener are the Services l controls: the one under its
// Service name, read by name, and those under other names (stale), through
// the index.
func servicesOfListener(ctx context.Context, c client.Reader, l *v1alpha1.Listener) ([]corev1.Service, error) {
	var owned corev1.ServiceList
	if err := c.List(ctx, &owned, client.InNamespace(l.Namespace), client.MatchingFields{indexServiceOwner: l.Name}); err != nil {
		return nil, fmt.Errorf("list services of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	svc := &corev1.Service{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)}, svc); {
	case err == nil:
		if controlledByListener(svc) == l.Name {
			owned.Items = append(owned.Items, *svc)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get service of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return owned.Items, nil
}

// claimsOfListener are the claims using the Listener namespace/name: the
// claim of the same name (a per-claim Listener's), read by name, and those
// of shared Listeners, through the index.
func claimsOfListener(ctx context.Context, c client.Reader, namespace, name string) ([]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexClaimListener: name}); err != nil {
		return nil, fmt.Errorf("list claims of listener %s/%s: %w", namespace, name, err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pvc); {
	case err == nil:
		if l, ok := claimListener(pvc); ok && l == name {
			list.Items = append(list.Items, *pvc)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get claim %s/%s: %w", namespace, name, err)
	}
	return list.Items, nil
}

// listenerServiceNames are the Service names a Listener is found by: the
// one its status publishes and the one it would get (they differ only when
// the naming changed, or before the first status).
func listenerServiceNames(l *v1alpha1.Listener) []string {
	own := names.ServiceName(l.Name)
	if s := l.Status.ServiceName; s != "" && s != own {
		return []string{s, own}
	}
	return []string{own}
}

// claimListener is the Listener a listener claim uses (claims.OfClaim):
// false when it is not a listener claim or uses none.
func claimListener(pvc *corev1.PersistentVolumeClaim) (string, bool) {
	use, ok := claims.OfClaim(pvc)
	return use.Listener, ok && use.Listener != ""
}
