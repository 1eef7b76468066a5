package provision

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// ControllerName names the controller in the registry (reconcile), logs,
// metrics and traces.
const ControllerName = "provision"

// EventProvisioned is the reason of the event on a claim whose volume the
// operator made (csi-provisioner's own reason, so that what users look for
// in `kubectl describe pvc` is there whoever made the volume).
const EventProvisioned = "ProvisioningSucceeded"

// waitRetry is how long a claim whose Listener or ListenerClass is not
// there waits before it is looked at again. Admission refuses such claims;
// csi-provisioner, which tries them too, reports why in the claim's
// events.
const waitRetry = 30 * time.Second

// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Setup registers the provisioner with mgr (the reconcilers' view of the
// manager: it runs on the leader), recording events with recorder. The
// registry in reconcile calls it when opts.Provision.Enabled.
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	n := opts.Provision.MaxConcurrentReconciles
	if n <= 0 {
		n = 1
	}
	r := &reconciler{client: mgr.GetClient(), recorder: recorder}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(unbound())).
		WithOptions(controller.Options{MaxConcurrentReconciles: n}).
		Complete(opts.Wrapped(ControllerName, r))
}

// unbound passes the events of listener claims that have no volume yet:
// creation, and updates (the scheduler's selected node arriving); a bound
// claim, and a claim's deletion, have nothing to provision.
func unbound() predicate.Predicate {
	wants := func(o client.Object) bool {
		c, ok := o.(*corev1.PersistentVolumeClaim)
		return ok && wantsVolume(c)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return wants(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return wants(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return wants(e.Object) },
	}
}

// reconciler provisions one listener claim at a time.
type reconciler struct {
	// client reads the cached claims, Listeners, classes, storage classes
	// and nodes, and creates volumes. The cache keeps of an unbound claim
	// what its volume is made from (caches.TrimClaim), so making a volume
	// costs one request, the create.
	client   client.Client
	recorder events.EventRecorder
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	plan, wait, err := r.plan(ctx, claim)
	if err != nil || plan == nil {
		if wait != "" {
			log.V(1).Info("not provisioning yet", "claim", req.NamespacedName, "reason", wait)
			return ctrl.Result{RequeueAfter: waitRetry}, err
		}
		return ctrl.Result{}, err
	}
	// The cached claim may be a moment behind: bound meanwhile (by
	// csi-provisioner, to a volume of this same name: the create below
	// finds it), or deleted (the volume, bound to a UID no claim has, is
	// released and deleted by its reclaim policy, as csi-provisioner's
	// would be).
	pv, err := volumes.PersistentVolume(volumes.Request{Claim: claim, Use: plan.use, StorageClass: plan.storageClass, Node: plan.node})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("volume of claim %s: %w", req.NamespacedName, err)
	}
	err = r.client.Create(ctx, pv, client.FieldOwner(v1alpha1.FieldManager))
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made already: by csi-provisioner (same name), or by an attempt
		// whose answer was lost. Either is this claim's: the name carries
		// its UID.
		provisionedTotal.WithLabelValues(resultExists).Inc()
		return ctrl.Result{}, nil
	case err != nil:
		provisionedTotal.WithLabelValues(resultError).Inc()
		return ctrl.Result{}, fmt.Errorf("create volume %s of claim %s: %w", pv.Name, req.NamespacedName, err)
	}
	provisionedTotal.WithLabelValues(resultCreated).Inc()
	where := ""
	if plan.node != "" {
		where = ", pinned to node " + plan.node
	}
	r.recorder.Eventf(claim, pv, corev1.EventTypeNormal, EventProvisioned, "Provision",
		"Provisioned volume %s for Listener %s%s (listener-operator)", pv.Name, plan.use.Listener, where)
	return ctrl.Result{}, nil
}

// plan is what a claim's volume is made from, as far as the caches tell.
type plan struct {
	use          claims.Use
	storageClass *storagev1.StorageClass
	// node is the node the volume is pinned to, "" when its class does
	// not pin.
	node string
}

// plan decides, from the caches, whether the claim's volume can be made
// now. It returns nil and no reason when there is nothing to do (not a
// listener claim, bound, or it waits for an event that brings it back:
// the scheduler's node), nil and a reason when it should be looked at
// again later (a Listener or class that is not there).
func (r *reconciler) plan(ctx context.Context, c *corev1.PersistentVolumeClaim) (*plan, string, error) {
	if !wantsVolume(c) {
		return nil, "", nil
	}
	use, _ := claims.OfClaim(c)
	if use.Listener == "" {
		// The claim reconciler tells the user why (NoListener).
		return nil, "", nil
	}
	var shared *v1alpha1.Listener
	if !use.Own {
		shared = &v1alpha1.Listener{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: use.Listener}, shared); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Sprintf("Listener %s not found", use.Listener), nil
			}
			return nil, "", fmt.Errorf("get Listener %s/%s: %w", c.Namespace, use.Listener, err)
		}
	}
	className := volumes.ClassName(use, shared)
	if className == "" {
		return nil, fmt.Sprintf("Listener %s has no spec.className", use.Listener), nil
	}
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: className}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("ListenerClass %s not found", className), nil
		}
		return nil, "", fmt.Errorf("get ListenerClass %s: %w", className, err)
	}
	sc := &storagev1.StorageClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *c.Spec.StorageClassName}, sc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("StorageClass %s not found", *c.Spec.StorageClassName), nil
		}
		return nil, "", fmt.Errorf("get StorageClass %s: %w", *c.Spec.StorageClassName, err)
	}
	if sc.Provisioner != v1alpha1.DriverName {
		// Not this driver's to provision.
		return nil, "", nil
	}
	p := &plan{use: use, storageClass: sc}
	if !class.Spec.IsPinned() {
		return p, "", nil
	}
	p.node = c.Annotations[volumes.AnnotationSelectedNode]
	if p.node == "" {
		// The scheduler writes it when it has picked the pod's node; that
		// update brings the claim back.
		return nil, "", nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: p.node}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("get node %s: %w", p.node, err)
	}
	if node.Labels[v1alpha1.TopologyKeyHostname] != node.Name {
		// The node plugin does not run there (the kubelet labels a node
		// with the driver's topology when it registers): a volume pinned
		// there could never be published. csi-provisioner refuses the
		// node, and the scheduler picks another.
		return nil, "", nil
	}
	return p, "", nil
}

// wantsVolume reports whether c is a listener claim that has no volume yet
// and is not being deleted.
func wantsVolume(c *corev1.PersistentVolumeClaim) bool {
	return claims.IsListenerClaim(c) && c.Spec.VolumeName == "" && c.DeletionTimestamp.IsZero()
}
