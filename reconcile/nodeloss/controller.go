package nodeloss

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=nodes;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/status,verbs=patch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=list;create;patch

// This file is the reconciler's flow. What it watches is in mapping.go,
// what it reads in observe.go, what it decides in releaserule.go, what it does
// in release.go (claims), pods.go (pods) and handover.go (hand-overs), and
// what it tells in report.go.

// ControllerName names the controller in the registry (reconcile),
// metrics, logs and traces; the status-ownership table names it.
const ControllerName = string(v1alpha1.NodeLossStatusWriter)

// conflictRetry is how soon a reconcile that lost a write race runs again.
const conflictRetry = time.Second

// Setup registers the node-loss controller with mgr (the reconcilers'
// view: it runs on the leader; the indexes of lookup.AddIndexes
// registered), recording events with recorder. The registry in reconcile
// calls it when opts.NodeLoss.Enabled.
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	nl := opts.NodeLoss
	if nl.HandoverTimeout <= 0 {
		return fmt.Errorf("node-loss options: handover-timeout must be positive, got %s", nl.HandoverTimeout)
	}
	if nl.MaxConcurrentReconciles <= 0 {
		nl.MaxConcurrentReconciles = 1
	}
	r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), recorder: recorder, opts: nl, now: time.Now}
	return watch(ctrl.NewControllerManagedBy(mgr).Named(ControllerName), mgr.GetClient()).
		WithOptions(controller.Options{MaxConcurrentReconciles: nl.MaxConcurrentReconciles}).
		Complete(opts.Wrapped(ControllerName, r))
}

// reconciler handles one claim name at a time: the claim (if it exists),
// the Listener handed over to it (if it does not), and the pods that mount
// it. It keeps nothing between reconciles: what was noted or released is
// read back from the objects (report.go, v1alpha1.AnnotationReleasedFromNode), so a
// new leader carries on where the last one stopped.
type reconciler struct {
	client client.Client
	// reader reads what is not cached: the events already recorded.
	reader   client.Reader
	recorder events.EventRecorder
	opts     options.NodeLoss
	now      func() time.Time
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc, ours, err := r.getClaim(ctx, req.NamespacedName)
	if err != nil || !ours {
		return ctrl.Result{}, err
	}
	pods, err := r.podsOf(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, st, err := r.converge(ctx, req.NamespacedName, pvc, pods)
	if err != nil {
		return res, err
	}
	return res, r.pods(ctx, req.NamespacedName, pvc, st, pods)
}

// claimState is what the claim step leaves to the pod step.
type claimState struct {
	// pin is the node the claim is pinned to ("" none, pinTerminating).
	pin string
	// releasedFrom is the node this reconcile released the claim from.
	releasedFrom string
}

// converge handles the claim named key as it is: gone (its hand-over),
// live, or on its way out.
func (r *reconciler) converge(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, pods []corev1.Pod) (ctrl.Result, claimState, error) {
	switch {
	case pvc == nil:
		clearLost(key.Namespace, key.Name)
		res, err := r.handover(ctx, key, pods, r.now())
		return res, claimState{}, err
	case pvc.DeletionTimestamp.IsZero():
		return r.claim(ctx, pvc, pods)
	default:
		res, err := r.terminating(ctx, pvc, pods)
		return res, claimState{pin: pinTerminating}, err
	}
}

// claim handles a listener claim that is not being deleted: it decides
// about its pin and reports, or releases it.
func (r *reconciler) claim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pods []corev1.Pod) (ctrl.Result, claimState, error) {
	node, d, listener, err := r.assess(ctx, pvc)
	if err != nil || node == "" {
		return ctrl.Result{}, claimState{pin: node}, err
	}
	res := ctrl.Result{RequeueAfter: d.recheck}
	switch {
	case !d.lost && !d.release:
		clearLost(pvc.Namespace, pvc.Name)
		return res, claimState{pin: node}, r.reportAvailable(ctx, pvc, listener, node)
	case !d.release:
		setLost(pvc.Namespace, pvc.Name, node, d.remedy)
		return res, claimState{pin: node}, r.reportLost(ctx, pvc, listener, pods, d)
	}
	return r.release(ctx, pvc, listener, node, d)
}

// assess reads what decide needs about a live claim and decides: the node
// it is pinned to ("" when none: nothing to decide), the decision and the
// claim's own Listener.
func (r *reconciler) assess(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, decision, *v1alpha1.Listener, error) {
	node, use, err := r.pinnedNodeOf(ctx, pvc)
	if err != nil || node == "" {
		clearLost(pvc.Namespace, pvc.Name)
		return "", decision{}, nil, err
	}
	info, err := r.claimInfo(ctx, pvc, use, node)
	if err != nil {
		return node, decision{}, nil, err
	}
	n, err := r.node(ctx, node)
	if err != nil {
		return node, decision{}, nil, err
	}
	d := decide(info, n, r.now())
	listener, err := r.ownListener(ctx, pvc, use)
	return node, d, listener, err
}
