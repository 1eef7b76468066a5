package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Event reasons of the claim controller.
const (
	EventListenerCreated = "ListenerCreated"
	EventListenerUpdated = "ListenerUpdated"
	EventForeignListener = "ForeignListener"
)

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// claimReconciler gives each listener claim that asks for a class a
// Listener of its own, named after and owned by the claim, so that the
// address lives exactly as long as the claim.
type claimReconciler struct {
	client   client.Client
	recorder events.EventRecorder
}

func setupClaimController(mgr ctrl.Manager, opts Options, recorder events.EventRecorder) error {
	r := &claimReconciler{client: mgr.GetClient(), recorder: recorder}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerClaim).
		For(&corev1.PersistentVolumeClaim{}).
		Owns(&v1alpha1.Listener{}).
		// A claim's ports come from the pods that mount it.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			var reqs []ctrl.Request
			for _, claim := range podClaims(o.(*corev1.Pod)) {
				reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: claim}})
			}
			return reqs
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

func (r *claimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer observeReconcile(controllerClaim, time.Now())
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wantsOwnListener(pvc) || !pvc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(pvc.Namespace), client.MatchingFields{indexPodClaim: pvc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods of claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	ports := podPorts(pods.Items)

	existing := &v1alpha1.Listener{}
	key := types.NamespacedName{Namespace: pvc.Namespace, Name: names.ClaimListenerName(pvc.Name)}
	err := r.client.Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
		l := claimListenerObject(pvc, ports)
		err := r.client.Create(ctx, l, client.FieldOwner(v1alpha1.FieldManager))
		if countWrite(controllerClaim, "Listener", "create", err) != nil {
			if apierrors.IsAlreadyExists(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, fmt.Errorf("create listener %s/%s for claim: %w", key.Namespace, key.Name, err)
		}
		r.recorder.Eventf(pvc, l, corev1.EventTypeNormal, EventListenerCreated, "Create", "Created Listener %s of class %s", l.Name, *l.Spec.ClassName)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get listener %s/%s: %w", key.Namespace, key.Name, err)
	}
	if !metav1.IsControlledBy(existing, pvc) {
		r.recorder.Eventf(pvc, existing, corev1.EventTypeWarning, EventForeignListener, "Reconcile",
			"Listener %s exists and is not owned by this claim; use the %s annotation to share it", existing.Name, v1alpha1.AnnotationListenerName)
		return ctrl.Result{}, nil
	}
	if len(pods.Items) == 0 {
		// Between pods the Listener keeps the ports it had, so the address
		// and its ports stay the same across restarts.
		ports = existing.Spec.Ports
	}
	want := claimListenerObject(pvc, ports)
	if equality.Semantic.DeepEqual(existing.Labels, want.Labels) && ptr.Equal(existing.Spec.ClassName, want.Spec.ClassName) &&
		equality.Semantic.DeepEqual(existing.Spec.Ports, want.Spec.Ports) {
		return ctrl.Result{}, nil
	}
	updated := existing.DeepCopy()
	updated.Labels = want.Labels
	updated.Spec.ClassName = want.Spec.ClassName
	updated.Spec.Ports = want.Spec.Ports
	err = r.client.Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager))
	if countWrite(controllerClaim, "Listener", "update", err) != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("update listener %s/%s for claim: %w", key.Namespace, key.Name, err)
	}
	r.recorder.Eventf(pvc, updated, corev1.EventTypeNormal, EventListenerUpdated, "Update", "Updated Listener %s", updated.Name)
	return ctrl.Result{}, nil
}

// claimListenerObject is the Listener a claim asks for.
func claimListenerObject(pvc *corev1.PersistentVolumeClaim, ports []v1alpha1.ListenerPort) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.ClaimListenerName(pvc.Name),
			Namespace: pvc.Namespace,
			Labels:    maps.Clone(pvc.Labels),
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
			ClassName: ptr.To(pvc.Annotations[v1alpha1.AnnotationListenerClass]),
			Ports:     ports,
		},
	}
}

// podPorts are the ports the containers of pods declare, unique by name
// (unnamed ones are named port-<number>) and sorted, so that the same pods
// always give the same Listener. Pods that finished are left out.
func podPorts(pods []corev1.Pod) []v1alpha1.ListenerPort {
	byName := map[string]v1alpha1.ListenerPort{}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				name := p.Name
				if name == "" {
					name = "port-" + strconv.Itoa(int(p.ContainerPort))
				}
				if _, dup := byName[name]; dup {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				byName[name] = v1alpha1.ListenerPort{Name: name, Port: p.ContainerPort, Protocol: proto}
			}
		}
	}
	out := slices.Collect(maps.Values(byName))
	slices.SortFunc(out, func(a, b v1alpha1.ListenerPort) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
