package listener

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// ControllerName names the Listener controller in metrics and logs (the
// status ownership table's name for it).
const ControllerName = string(v1alpha1.ListenerStatusWriter)

// Setup registers the Listener controller with mgr (the indexes of
// lookup.AddIndexes registered).
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	r := &listenerReconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), recorder: recorder, opts: opts, gatewayAPI: &gatewayAPIState{}}
	c := mgr.GetClient()
	ctl, err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Status writes (ours) do not change the generation; labels are
		// copied to the Service, so they count.
		For(&v1alpha1.Listener{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// Not only owned Services: a foreign Service going away frees its
		// name for the Listener waiting for it.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			reqs := lookup.ListenersOfService(ctx, c, o.GetNamespace(), o.GetName())
			if owner := lookup.ControlledByListener(o); owner != "" {
				reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: owner}})
			}
			// A name it drops or takes with it goes to the next Listener.
			return append(reqs, listenersOfHostnames(ctx, c, o)...)
		}), builder.WithPredicates(predicate.Funcs{
			// The controller creates its Listeners' Services itself and
			// publishes from the API server's answer; seeing its own
			// creation again would only reconcile against a cache that lags
			// the status it wrote. (After a restart every Listener is
			// reconciled anyway.) But one that carries a DNS name may
			// take it from another Listener (hostnameconflict.go).
			CreateFunc: func(e event.CreateEvent) bool {
				owner := lookup.ControlledByListener(e.Object)
				return owner == "" || names.ServiceName(owner) != e.Object.GetName() || len(lookup.HostnamesOf(e.Object)) > 0
			},
		})).
		// Ports given up make room for the Listeners waiting for a
		// range (portsfreed.go).
		Watches(&corev1.Service{}, portsFreed(c, serviceFreesPorts)).
		Watches(&v1alpha1.Listener{}, portsFreed(c, listenerFreesNodePorts)).
		// A Listener going away frees its names for a later one that
		// was refused them (namecollision.go).
		Watches(&v1alpha1.Listener{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return listenersNamedLike(ctx, c, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Watches(&v1alpha1.ListenerClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return lookup.ListenersOfClass(ctx, c, o.GetName())
		})).
		// A NodePort Listener publishes the nodes its pods run on.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return listenersOfPod(ctx, c, o.(*corev1.Pod))
		}), builder.WithPredicates(podServingChanged())).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			if name, ok := lookup.ClaimListener(o.(*corev1.PersistentVolumeClaim)); ok {
				return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return listenerOfVolume(ctx, c, o.(*corev1.PersistentVolume))
		})).
		// A StatefulSet made or deleted (its claim templates cannot
		// change) decides whether the Listeners of its claims select its
		// pods by name (podselection.go). Only its metadata is held.
		WatchesMetadata(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return listenersSelectingPodsOf(ctx, c, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		// A ResourceQuota made, changed or deleted may let a refused
		// Service through (outcome.go). Only its metadata is held.
		WatchesMetadata(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return lookup.ListenersRefusedIn(ctx, c, o.GetNamespace())
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return listenersOnNode(ctx, c, o.GetName())
		}), builder.WithPredicates(nodeAddressesChanged())).
		// What a load balancer says of a Service it cannot serve
		// (lbwarning.go); a Warning deleted (expired) changes nothing.
		Watches(&eventsv1.Event{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return warningListeners(ctx, c, o)
		}), builder.WithPredicates(predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Build(opts.Wrapped(ControllerName, r))
	if err != nil || !opts.GatewayAPI {
		return err
	}
	return mgr.Add(&gatewayWatch{ctl: ctl, cache: mgr.GetCache(), mapper: mgr.GetRESTMapper(), client: c, state: r.gatewayAPI, period: gatewayRecheck})
}

// nodeAddressesChanged passes node events that can change a published
// address: a node appearing, going, or changing its addresses or its node
// address annotation (not the heartbeats that update nodes every few
// seconds).
func nodeAddressesChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldN, ok1 := e.ObjectOld.(*corev1.Node)
			newN, ok2 := e.ObjectNew.(*corev1.Node)
			return !ok1 || !ok2 || !equality.Semantic.DeepEqual(oldN.Status.Addresses, newN.Status.Addresses) ||
				oldN.Annotations[v1alpha1.AnnotationNodeAddress] != newN.Annotations[v1alpha1.AnnotationNodeAddress]
		},
	}
}

// listenersOfPod maps a pod to the Listeners of its claims.
func listenersOfPod(ctx context.Context, c client.Reader, pod *corev1.Pod) []ctrl.Request {
	var reqs []ctrl.Request
	for _, name := range names.PodClaimNames(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pvc); err != nil {
			continue // not a listener claim (not cached), or not made yet: its creation maps
		}
		if l, ok := lookup.ClaimListener(pvc); ok {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: l}})
		}
	}
	return reqs
}

// podServingChanged passes pod events that can change the nodes a NodePort
// Listener publishes (podNodes): a pod appearing or going, bound to a node,
// becoming ready or not, finishing, or starting to be deleted; not the other
// status updates of a pod's life.
func podServingChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldP, ok1 := e.ObjectOld.(*corev1.Pod)
			newP, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return oldP.Spec.NodeName != newP.Spec.NodeName ||
				podstate.Ready(oldP) != podstate.Ready(newP) ||
				podstate.Finished(oldP) != podstate.Finished(newP) ||
				(oldP.DeletionTimestamp == nil) != (newP.DeletionTimestamp == nil)
		},
	}
}

// listenerOfVolume maps a PersistentVolume to the Listener its claim uses.
func listenerOfVolume(ctx context.Context, c client.Reader, pv *corev1.PersistentVolume) []ctrl.Request {
	ref := pv.Spec.ClaimRef
	if ref == nil || len(addresses.PinnedNodes(pv)) == 0 {
		return nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, pvc); err != nil {
		return nil
	}
	if name, ok := lookup.ClaimListener(pvc); ok {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: pvc.Namespace, Name: name}}}
	}
	return nil
}

// listenersOnNode maps a node to the Listeners it may serve: through the
// pods running on it or the volumes pinned to it.
func listenersOnNode(ctx context.Context, c client.Reader, node string) []ctrl.Request {
	var reqs []ctrl.Request
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingFields{lookup.IndexPodNode: node}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list pods on node", "node", node)
	}
	for i := range pods.Items {
		reqs = append(reqs, listenersOfPod(ctx, c, &pods.Items[i])...)
	}
	var pvs corev1.PersistentVolumeList
	if err := c.List(ctx, &pvs, client.MatchingFields{lookup.IndexPVNode: node}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list volumes pinned to node", "node", node)
	}
	for i := range pvs.Items {
		reqs = append(reqs, listenerOfVolume(ctx, c, &pvs.Items[i])...)
	}
	return reqs
}
