package nodeloss

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// This file maps what the controller watches to the claim names it
// reconciles (a request is a claim's namespace and name, whether or not
// the claim exists), with the cache indexes that mapping needs.

// The cache indexes the mapping lists by (lookup.AddIndexes registers
// every index once; pods of a claim are looked up by caches.PodsOfClaim).
const (
	indexPVNode     = lookup.IndexPVNode
	indexClaimClass = lookup.IndexClaimOwnClass
)

// watch registers the watches of the controller on b: listener claims
// themselves, and the volumes, nodes, pods, handed-over Listeners and
// classes that change what is true of one.
func watch(b *builder.Builder, c client.Reader) *builder.Builder {
	return b.
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return claims.IsListenerClaim(o.(*corev1.PersistentVolumeClaim))
		}))).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return claimOfVolume(o.(*corev1.PersistentVolume))
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return claimsPinnedTo(ctx, c, o.GetName())
		}), builder.WithPredicates(nodeUsabilityChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return claimsOfPod(o.(*corev1.Pod))
		})).
		Watches(&v1alpha1.Listener{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return claimHandedOverTo(o)
		})).
		Watches(&v1alpha1.ListenerClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return claimsOfClass(ctx, c, o.GetName())
		}))
}

// nodeUsabilityChanged passes node events that can change whether pods
// pinned to it can run: a node appearing or going, its Ready condition or
// its unschedulable flag changing (not heartbeats).
func nodeUsabilityChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			a, b := stateOf(o), stateOf(n)
			return a.ready != b.ready || a.unschedulable != b.unschedulable || !a.notReadySince.Equal(b.notReadySince)
		},
	}
}

// claimOfVolume is the claim a pinned volume is bound to.
func claimOfVolume(pv *corev1.PersistentVolume) []ctrl.Request {
	if ref := pv.Spec.ClaimRef; ref != nil && addresses.PinnedNode(pv) != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	return nil
}

// claimsPinnedTo are the claims of the volumes pinned to node.
func claimsPinnedTo(ctx context.Context, c client.Reader, node string) []ctrl.Request {
	var pvs corev1.PersistentVolumeList
	if err := c.List(ctx, &pvs, client.MatchingFields{indexPVNode: node}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list volumes pinned to node", "node", node)
		return nil
	}
	var reqs []ctrl.Request
	for i := range pvs.Items {
		reqs = append(reqs, claimOfVolume(&pvs.Items[i])...)
	}
	return reqs
}

// claimsOfPod are the claims a pod mounts.
func claimsOfPod(p *corev1.Pod) []ctrl.Request {
	var reqs []ctrl.Request
	for _, claim := range names.PodClaimNames(p) {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: claim}})
	}
	return reqs
}

// claimHandedOverTo is the claim a Listener was handed over to.
func claimHandedOverTo(l client.Object) []ctrl.Request {
	if claim := l.GetAnnotations()[v1alpha1.AnnotationHandoverToClaim]; claim != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: l.GetNamespace(), Name: claim}}}
	}
	return nil
}

// claimsOfClass are the claims whose own Listener is of class.
func claimsOfClass(ctx context.Context, c client.Reader, class string) []ctrl.Request {
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.MatchingFields{indexClaimClass: class}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list claims of class", "class", class)
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
