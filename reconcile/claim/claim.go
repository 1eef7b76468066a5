package claim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"
	"github.com/listener-operator/listener-operator/reconcile/internal/labelpatch"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/internal/refused"
	"github.com/listener-operator/listener-operator/reconcile/options"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podstate"
	listenerports "github.com/listener-operator/listener-operator/api/ports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// Event reasons of the claim controller.
const (
	EventListenerCreated = "ListenerCreated"
	EventListenerUpdated = "ListenerUpdated"
	EventForeignListener = "ForeignListener"
	EventListenerAdopted = "ListenerAdopted"
	// EventNoListener says a listener claim uses no Listener: it names
	// neither a class nor a Listener, or an empty class (claims.Of).
	EventNoListener = "NoListener"
	// EventBindingKept says a bound claim's listener annotations changed
	// (while the webhooks were down): the volume keeps its Listener.
	EventBindingKept = "ListenerBindingKept"
	// EventListenerRefused says the API server refused the controller's
	// write of the claim's own Listener (an admission webhook or policy,
	// a quota, the schema), with its message.
	EventListenerRefused = "ListenerRefused"
)

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=create;update
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=patch

// claimReconciler gives each listener claim that asks for a class a
// Listener of its own, named after and owned by the claim, so that the
// address lives exactly as long as the claim.
type claimReconciler struct {
	client client.Client
	// live reads a claim's volume that the cache does not hold yet: the
	// cache holds only marked volumes, and the reconciler marks them.
	live     client.Reader
	recorder events.EventRecorder
	// refusals tells the claim when the API server refuses a write of its
	// Listener, and the Listener by ClaimApplied.
	refusals refused.Reporter
}

// ControllerName names the claim controller in metrics and logs.
const ControllerName = string(v1alpha1.ClaimStatusWriter)

// Setup registers the claim controller with mgr (the indexes of
// lookup.AddIndexes registered).
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	r := &claimReconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), recorder: recorder, refusals: refused.Reporter{
		Client: mgr.GetClient(), Recorder: recorder, Reason: EventListenerRefused,
		Condition: v1alpha1.ConditionClaimApplied, Writer: v1alpha1.ClaimStatusWriter,
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.PersistentVolumeClaim{}).
		Owns(&v1alpha1.Listener{}).
		// A claim's ports come from the pods that mount it.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			var reqs []ctrl.Request
			for _, claim := range names.PodClaimNames(o.(*corev1.Pod)) {
				reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: claim}})
			}
			return reqs
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.Wrapped(ControllerName, r))
}

func (r *claimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer metrics.ObserveReconcile(ControllerName, time.Now())
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	use, ok := claims.OfClaim(pvc)
	if !pvc.DeletionTimestamp.IsZero() || !ok {
		return ctrl.Result{}, nil
	}
	bound, err := r.keepBinding(ctx, pvc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if use.Problem != "" {
		// Admission refuses such a claim; it got in while the webhooks
		// were down.
		r.recorder.Eventf(pvc, nil, corev1.EventTypeWarning, EventNoListener, "Reconcile", "PersistentVolumeClaim %s %s", pvc.Name, use.Problem)
		return ctrl.Result{}, nil
	}
	if !use.Own {
		return ctrl.Result{}, nil
	}
	pods, err := caches.PodsOfClaim(ctx, r.client, pvc.Namespace, pvc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	existing, err := r.ownListener(ctx, pvc.Namespace, use.Listener)
	if err != nil {
		return ctrl.Result{}, err
	}
	o := decide(pvc, use, bound, listenerports.FromPods(pods), existing)
	if o.portless {
		r.warnPortless(pods, existing, pvc)
	}
	if o.action == actionNone {
		// Nothing left to write: a refusal told earlier is over.
		return ctrl.Result{}, r.refusals.Accepted(ctx, existing)
	}
	return r.carryOut(ctx, pvc, use, o)
}

// ownListener reads the Listener named name from the cache (nil: none).
func (r *claimReconciler) ownListener(ctx context.Context, namespace, name string) (*v1alpha1.Listener, error) {
	existing := &v1alpha1.Listener{}
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, existing); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get listener %s/%s: %w", namespace, name, err)
	}
	return existing, nil
}

// carryOut does what o decided for the claim's own Listener: creates it,
// writes the update, or tells the claim why it keeps another's.
func (r *claimReconciler) carryOut(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use, o outcome) (ctrl.Result, error) {
	switch o.action {
	case actionCreate:
		return r.createListener(ctx, pvc, use, o.ports)
	case actionAwaitCollection:
		r.recorder.Eventf(pvc, o.listener, corev1.EventTypeNormal, EventForeignListener, "Reconcile",
			"Listener %s belongs to an earlier claim of this name (uid %s); waiting for it to be garbage-collected", o.listener.Name, metav1.GetControllerOf(o.listener).UID)
	case actionRefuseForeign:
		r.recorder.Eventf(pvc, o.listener, corev1.EventTypeWarning, EventForeignListener, "Reconcile",
			"Listener %s exists and is not owned by this claim; use the %s annotation to share it", o.listener.Name, v1alpha1.AnnotationListenerName)
	case actionUpdate, actionAdopt:
		return r.updateListener(ctx, pvc, o)
	}
	return ctrl.Result{}, nil
}

// updateListener writes o.listener, the claim's Listener as decided, and
// records it by an event.
func (r *claimReconciler) updateListener(ctx context.Context, pvc *corev1.PersistentVolumeClaim, o outcome) (ctrl.Result, error) {
	updated := o.listener
	err := r.client.Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Listener", "update", err) != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil
		}
		// o.listener still carries the status the cache read.
		if _, werr := r.refusals.Report(ctx, pvc, o.listener, writeOf("update", updated.Name, updated.Spec.Ports), err); werr != nil {
			err = errors.Join(err, fmt.Errorf("write condition %s: %w", v1alpha1.ConditionClaimApplied, werr))
		}
		return ctrl.Result{}, fmt.Errorf("update listener %s/%s for claim: %w", updated.Namespace, updated.Name, err)
	}
	if err := r.refusals.Accepted(ctx, updated); err != nil {
		return ctrl.Result{}, err
	}
	if o.action == actionAdopt {
		r.recorder.Eventf(pvc, updated, corev1.EventTypeNormal, EventListenerAdopted, "Adopt", "Adopted Listener %s for this claim (handed over, or made by the Stackable operator)", updated.Name)
		return ctrl.Result{}, nil
	}
	r.recorder.Eventf(pvc, updated, corev1.EventTypeNormal, EventListenerUpdated, "Update", "Updated Listener %s", updated.Name)
	return ctrl.Result{}, nil
}

// writeOf names a write (verb: "update", "creation") of the claim's
// Listener named name with ports, as a refusal tells it.
func writeOf(verb, name string, ports []v1alpha1.ListenerPort) string {
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = fmt.Sprintf("%s (%d)", p.Name, p.Port)
	}
	return fmt.Sprintf("%s of Listener %s with the ports of the pods that mount this claim [%s]", verb, name, strings.Join(names, ", "))
}

// warnPortless tells the running pods of pvc that never declared a port
// (the pod webhook refuses them; these got in while it was down) why they
// wait: they would wait silently.
func (r *claimReconciler) warnPortless(pods []corev1.Pod, l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim) {
	for i := range pods {
		if p := &pods[i]; podstate.Running(p) {
			r.recorder.Eventf(p, l, corev1.EventTypeWarning, claimlistener.EventNoPorts, "Reconcile", "%s", claimlistener.PortlessMessage(l.Name, pvc.Name))
		}
	}
}

// createListener creates the claim's own Listener. Which pod it selects
// by name, if any, is decided now, reading the StatefulSet from the API
// server (claimlistener.SelectedByName).
func (r *claimReconciler) createListener(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use, ports []v1alpha1.ListenerPort) (ctrl.Result, error) {
	byName, err := claimlistener.SelectedByName(ctx, r.live, pvc)
	if err != nil {
		return ctrl.Result{}, err
	}
	l := claimListenerObject(pvc, use, ports, byName.Pod)
	err = r.client.Create(ctx, l, client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Listener", "create", err) != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil
		}
		// No Listener to carry a condition: the claim is told.
		_, _ = r.refusals.Report(ctx, pvc, nil, writeOf("creation", l.Name, ports), err)
		return ctrl.Result{}, fmt.Errorf("create listener %s/%s for claim: %w", l.Namespace, l.Name, err)
	}
	r.recorder.Eventf(pvc, l, corev1.EventTypeNormal, EventListenerCreated, "Create", "Created Listener %s of class %s", l.Name, *l.Spec.ClassName)
	if byName.Problem != "" {
		// Admission refuses such a claim; it got in while the webhooks
		// were down.
		r.recorder.Eventf(pvc, l, corev1.EventTypeWarning, claimlistener.EventStatefulSetPodRefused, "Create", "%s",
			claimlistener.RefusedSelectionMessage(pvc.Name, byName, pvc.Annotations[v1alpha1.AnnotationStatefulSetClaimTemplate]))
	}
	return ctrl.Result{}, nil
}

// keepBinding records, on the volume of a bound claim, the Listener it was
// provisioned for (v1alpha1.LabelVolumeListener), and tells the user by an
// event when the claim's annotations name another one since: the binding
// is kept (the CSI driver publishes the Listener of the volume context).
// It also marks the volume (claims.VolumeNeedsMark), which puts it in the
// operator's caches; both labels go in one patch. It returns the recorded
// Listener ("" while the claim is not bound, or names no Listener to
// record).
func (r *claimReconciler) keepBinding(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	pv, err := r.volume(ctx, pvc)
	if pv == nil || err != nil {
		return "", err
	}
	bound := pv.Labels[v1alpha1.LabelVolumeListener]
	want, ok := lookup.ClaimListener(pvc)
	add := map[string]string{}
	if claims.VolumeNeedsMark(pvc, pv) {
		add[v1alpha1.LabelListenerVolume] = "true"
	}
	if ok && bound == "" {
		add[v1alpha1.LabelVolumeListener] = want
	}
	if len(add) > 0 {
		if err := labelpatch.AddLabels(ctx, r.client, ControllerName, "PersistentVolume", pv, add); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		if bound == "" {
			bound = add[v1alpha1.LabelVolumeListener]
		}
	}
	if ok && bound != want {
		r.recorder.Eventf(pvc, pv, corev1.EventTypeWarning, EventBindingKept, "Reconcile",
			"the claim's annotations now name Listener %s, but volume %s was provisioned for Listener %s and keeps publishing it (listener annotations are immutable once a claim is bound); delete the claim and create it again to use %s",
			want, pv.Name, bound, want)
	}
	return bound, nil
}

// volume is the claim's bound volume (lookup.BoundVolume), from the cache or, when
// the cache does not hold it (not marked yet), from the API server.
func (r *claimReconciler) volume(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	pv, err := lookup.BoundVolume(ctx, r.client, pvc)
	if pv != nil || err != nil || pvc.Spec.VolumeName == "" || r.live == nil {
		return pv, err
	}
	return lookup.BoundVolume(ctx, r.live, pvc)
}

// handedOver reports whether l was handed over to pvc (node-loss recovery
// deleted the claim it belonged to): it has no controller and its
// handover annotation names pvc. A Listener without a controller and
// without that annotation may be a user's own and is never adopted.
func handedOver(l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim) bool {
	return metav1.GetControllerOf(l) == nil && l.DeletionTimestamp.IsZero() &&
		l.Annotations[v1alpha1.AnnotationHandoverToClaim] == pvc.Name
}

// claimListenerObject is the claim's own Listener (use: claims.Of).
// A claim that a StatefulSet made from its annotated listener claim template
// gets a Listener that selects its pod by name (pod, from
// claims.SelectedByName; "" selects by label); the annotation is set when
// the Listener is created and never changed, so that the Service's
// selector never switches under running pods.
func claimListenerObject(pvc *corev1.PersistentVolumeClaim, use claims.Use, ports []v1alpha1.ListenerPort, pod string) *v1alpha1.Listener {
	var ann map[string]string
	if pod != "" {
		ann = map[string]string{v1alpha1.AnnotationStatefulSetPod: pod}
	}
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{
			Name:        use.Listener,
			Namespace:   pvc.Namespace,
			Labels:      claims.ListenerLabels(pvc.Labels),
			Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "v1",
				Kind:               "PersistentVolumeClaim",
				Name:               pvc.Name,
				UID:                pvc.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To(use.Class),
			Ports:     ports,
		},
	}
}
