package listener

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// portsFreed wakes the Listeners waiting for ports of their class's range
// (lookup.ListenersWaitingForPorts) when freed says an object gave ports
// up: a Service deleted, or updated without a node port or a shared port
// it had; a Listener that no longer records a node port in its status
// (rangeAskOf counts those held). Without it they looked again only after
// rangeRecheck, so a Listener waited up to 30 s for ports already free. The
// waiters are few (the cache's index finds them), and a recheck of one
// whose range is still full writes nothing.
func portsFreed(c client.Reader, freed func(old, cur client.Object) bool) handler.Funcs {
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range lookup.ListenersWaitingForPorts(ctx, c) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if freed(e.ObjectOld, e.ObjectNew) {
				wake(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if freed(e.Object, nil) {
				wake(ctx, q)
			}
		},
	}
}

// serviceFreesPorts says whether Service old, now cur (nil: deleted),
// gave up a node port, or a port it had under a sharing key (or the key).
func serviceFreesPorts(oldObj, curObj client.Object) bool {
	old, ok := oldObj.(*corev1.Service)
	if !ok {
		return false
	}
	cur, _ := curObj.(*corev1.Service)
	key := old.Annotations[v1alpha1.AnnotationMetalLBSharedIP]
	nodePorts, ports := map[int32]bool{}, map[int32]bool{}
	if cur != nil {
		if cur.Annotations[v1alpha1.AnnotationMetalLBSharedIP] != key {
			return key != ""
		}
		for _, p := range cur.Spec.Ports {
			nodePorts[p.NodePort], ports[p.Port] = true, true
		}
	}
	for _, p := range old.Spec.Ports {
		if p.NodePort != 0 && !nodePorts[p.NodePort] || key != "" && !ports[p.Port] {
			return true
		}
	}
	return false
}

// listenerFreesNodePorts says whether Listener old, now cur (nil:
// deleted), no longer records a node port it recorded.
func listenerFreesNodePorts(oldObj, curObj client.Object) bool {
	old, ok := oldObj.(*v1alpha1.Listener)
	if !ok {
		return false
	}
	kept := map[int32]bool{}
	if cur, _ := curObj.(*v1alpha1.Listener); cur != nil {
		for _, p := range cur.Status.NodePorts { // name → node port
			kept[p] = true
		}
	}
	for _, p := range old.Status.NodePorts {
		if !kept[p] {
			return true
		}
	}
	return false
}
