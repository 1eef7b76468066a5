package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/csaupgrade"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/overrides"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// Event reasons of the Listener controller (Ready condition reasons are
// events too when the condition changes).
const (
	EventServiceCreated = "ServiceCreated"
	EventServiceUpdated = "ServiceUpdated"
	EventServiceDeleted = "ServiceDeleted"
	// EventOverridesDropped names the parts of a Listener's objectOverrides
	// its class does not allow, left out of the Service that was applied.
	EventOverridesDropped = "OverridesDropped"
)

// EventNoPorts tells the pods of a claim whose Listener has no ports (they
// wait for an address that cannot come) what to fix.
const EventNoPorts = "ListenerWithoutPorts"

// portless is the verdict for a Listener without ports, whose Service the
// API server would refuse. A claim's own Listener takes its ports from the
// containers of its pods; those pods (admitted while the pod webhook, which
// refuses them, was down) get an event from the claim reconciler.
func portless(l *v1alpha1.Listener) verdict {
	owner := metav1.GetControllerOf(l)
	if owner == nil || owner.Kind != "PersistentVolumeClaim" {
		return verdict{reason: v1alpha1.ReasonInvalid, message: "spec.ports is empty, so no Service can be made for this Listener; list the ports its pods serve in spec.ports"}
	}
	return verdict{reason: v1alpha1.ReasonInvalid, message: portlessMessage(l.Name, owner.Name)}
}

// portlessMessage says why a claim's own Listener has no ports and what to
// do about it.
func portlessMessage(listener, claim string) string {
	return fmt.Sprintf("Listener %s of claim %s has no ports: no container of the pods that mount the claim declares one, so no Service can be made and the pods wait for an address; "+
		"declare the served ports on the container that serves (e.g. ports: [{name: http, containerPort: 8080}]) and recreate the pods, or share a Listener that has ports with the %s annotation",
		listener, claim, v1alpha1.AnnotationListenerName)
}

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=get;list;watch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/status,verbs=update
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// listenerReconciler keeps a Listener's Service and status.
type listenerReconciler struct {
	client   client.Client // reads from the cache
	live     client.Reader // reads from the API server
	recorder events.EventRecorder
	opts     Options
	// written holds our status writes the cache has not shown yet.
	written ownWrites
	// takeover backs off Listeners whose Service waits to switch selectors.
	takeover takeoverBackoff
}

func (r *listenerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer observeReconcile(controllerListener, time.Now())
	l := &v1alpha1.Listener{}
	if err := r.client.Get(ctx, req.NamespacedName, l); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.takeover.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !l.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if r.written.cacheBehind(req.NamespacedName, l.ResourceVersion, time.Now()) {
		// Our last status write has not reached the cache: a status
		// computed now would be compared with an older one.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	st, v, err := r.reconcileService(ctx, l)
	if errors.Is(err, errRetrySoon) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	takeover := errors.Is(err, errTakeoverPending) // st and v are valid
	if takeover {
		err = nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !v.ready && !v.unpublish {
		st = keepPublished(l.Status, st)
	}
	conflict, err := r.updateStatus(ctx, l, st, v)
	if conflict {
		// The cache has not caught up with a newer Listener (often our own
		// last status write): look again once it has.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if err == nil && takeover {
		return ctrl.Result{RequeueAfter: r.takeover.after(req.NamespacedName)}, nil
	}
	if err == nil && awaitsOthers(v) {
		return ctrl.Result{RequeueAfter: awaitingRecheck}, nil
	}
	if err == nil && blockedOutsideCache(v) {
		return ctrl.Result{RequeueAfter: foreignServiceRecheck}, nil
	}
	return ctrl.Result{}, err
}

// conflictRetry is how soon a reconcile that lost an optimistic-concurrency
// race looks again.
const conflictRetry = 50 * time.Millisecond

// awaitingRecheck is how often a Listener that waits for other components
// (endpoints, a load balancer) looks again on its own. Their events normally
// wake it first; the recheck bounds the wait when one is missed, e.g. an
// EndpointSlice event mapped while a new leader's Service cache still lagged
// (seen in the leader-kill fault test: one of 200 Listeners stayed NoNodes
// with a ready endpoint). It costs reads from the cache, and no write while
// nothing changed.
const awaitingRecheck = 30 * time.Second

// awaitsOthers: the verdict waits for something other components provide,
// not for a fix by the user.
func awaitsOthers(v verdict) bool {
	return !v.ready && (v.reason == v1alpha1.ReasonNoNodes || v.reason == v1alpha1.ReasonAwaitingLoadBalancer)
}

// reconcileService brings the Listener's Service in line and computes the
// status to publish. Problems with the user's objects become a verdict, not
// an error: an error means "retry".
func (r *listenerReconciler) reconcileService(ctx context.Context, l *v1alpha1.Listener) (v1alpha1.ListenerStatus, verdict, error) {
	if l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		// The user asked for no class: no Service, and no address stays
		// published (status, PodListeners, the next volume publish).
		if err := r.deleteStaleServices(ctx, l, ""); err != nil {
			return v1alpha1.ListenerStatus{}, verdict{}, err
		}
		return v1alpha1.ListenerStatus{}, verdict{reason: v1alpha1.ReasonNoClass, unpublish: true,
			message: "spec.className is not set, so the Listener has no Service and publishes no address; name a ListenerClass to expose it"}, nil
	}
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			// Only possible while the webhooks were down (the in-use guard
			// refuses the delete, counting status.className): the Service
			// stays as last made, and so do its addresses.
			return v1alpha1.ListenerStatus{}, verdict{reason: v1alpha1.ReasonClassNotFound,
				message: fmt.Sprintf("ListenerClass %q does not exist; the Service stays as ListenerClass %q made it until it does, or spec.className names another class", *l.Spec.ClassName, l.Status.ClassName)}, nil
		}
		return v1alpha1.ListenerStatus{}, verdict{}, fmt.Errorf("get listener class %s: %w", *l.Spec.ClassName, err)
	}
	// The webhooks refuse such objects at admission; these checks catch the
	// ones admitted before the webhooks ran, or while they were down.
	errs := validation.ListenerClass(class)
	errs = append(errs, validation.Listener(l, validation.NewClassNames(class.Name))...)
	if owner := metav1.GetControllerOf(l); l.Annotations[v1alpha1.AnnotationStatefulSetPod] != "" {
		// Only the operator's Listeners of StatefulSet claims select a
		// pod by name (the webhook refuses the annotation on others).
		var claim *corev1.PersistentVolumeClaim
		if owner != nil && owner.Kind == "PersistentVolumeClaim" {
			c := &corev1.PersistentVolumeClaim{}
			err := r.client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: owner.Name}, c)
			switch {
			case err == nil:
				claim = c
			case !apierrors.IsNotFound(err):
				return v1alpha1.ListenerStatus{}, verdict{}, fmt.Errorf("get claim %s/%s of listener %s: %w", l.Namespace, owner.Name, l.Name, err)
			}
		}
		errs = append(errs, validation.StatefulSetPodAnnotation(l, claim)...)
	}
	if len(errs) > 0 {
		return v1alpha1.ListenerStatus{}, verdict{reason: v1alpha1.ReasonInvalid, message: errs.ToAggregate().Error()}, nil
	}
	if len(l.Spec.Ports) == 0 {
		return v1alpha1.ListenerStatus{}, portless(l), nil
	}
	// The class is policy, and one rule (overrides.Service) decides with the
	// webhook what the overrides may change: what it refuses is left out
	// of the Service, so exposure is never more than the class gives.
	want, refused, err := desiredService(l, class)
	if err != nil {
		return v1alpha1.ListenerStatus{}, verdict{reason: v1alpha1.ReasonInvalid, message: err.Error()}, nil
	}
	svcName := want.GetName()
	if err := r.deleteStaleServices(ctx, l, svcName); err != nil {
		return v1alpha1.ListenerStatus{}, verdict{}, err
	}

	svc, err := r.existingService(ctx, l.Namespace, svcName)
	if err != nil {
		return v1alpha1.ListenerStatus{}, verdict{}, err
	}
	if svc != nil && !metav1.IsControlledBy(svc, l) {
		return v1alpha1.ListenerStatus{}, foreignServiceVerdict(svcName), nil
	}
	// A Service another operator made selects pods its own way (adopt.go).
	takeover := r.takeOverSelector(ctx, l, svc, want)
	if takeover != nil && !errors.Is(takeover, errTakeoverPending) {
		return v1alpha1.ListenerStatus{}, verdict{}, takeover
	}
	upToDate := false
	if svc != nil {
		if upToDate, err = serviceUpToDate(svc, want); err != nil {
			return v1alpha1.ListenerStatus{}, verdict{}, err
		}
	}
	if !upToDate {
		created := svc == nil
		if created {
			svc, err = r.createStickyService(ctx, l, class, want) // nodeports.go
		} else {
			svc, err = r.applyService(ctx, l, want, svc)
		}
		if err != nil {
			if v, ok := asForeignService(err); ok {
				return v1alpha1.ListenerStatus{}, v, nil
			}
			if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				// The API server rejected what the class and overrides make:
				// retrying will not help until someone edits them.
				return v1alpha1.ListenerStatus{}, verdict{reason: v1alpha1.ReasonInvalid, message: fmt.Sprintf("Service %s was rejected: %v", svcName, err)}, nil
			}
			return v1alpha1.ListenerStatus{}, verdict{}, err
		}
		if created {
			if svc, err = r.awaitAllocations(ctx, svc, class); err != nil {
				return v1alpha1.ListenerStatus{}, verdict{}, err
			}
		}
		if len(refused) > 0 {
			r.recorder.Eventf(l, svc, corev1.EventTypeWarning, EventOverridesDropped, "Apply",
				"%s", truncate(fmt.Sprintf("Service %s was made without these objectOverrides, which ListenerClass %q does not allow: %s", svcName, class.Name, strings.Join(overrides.Fields(refused), ", "))))
		}
	}

	var nodes []*corev1.Node
	if class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort {
		if nodes, err = r.servingNodes(ctx, l, svcName); err != nil {
			return v1alpha1.ListenerStatus{}, verdict{}, err
		}
	}
	st, v := serviceStatus(observed{class: class, svc: svc, nodes: nodes, clusterDomain: r.opts.ClusterDomain})
	if len(refused) > 0 {
		// The Service serves, but not as the Listener asked: say what was
		// left out and how to fix it.
		v = verdict{reason: v1alpha1.ReasonInvalid, message: fmt.Sprintf(
			"Service %s was made without the parts of spec.objectOverrides that ListenerClass %q does not allow (remove them from the Listener to clear this): %s",
			svcName, class.Name, refused.ToAggregate().Error())}
	}
	st = r.withAddressFeatures(st, l, class) // hostname.go
	return st, v, takeover
}

// existingService reads the Service from the cache. A Service the cache has
// not seen yet is not trusted to be absent: it is created, never applied
// (see createService).
func (r *listenerReconciler) existingService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", namespace, name, err)
	}
	return svc, nil
}

// errRetrySoon says the cache is behind the API server: reconcile again
// shortly instead of acting on what it shows.
var errRetrySoon = errors.New("cache is behind the API server")

// createService creates a new Service. Creating (not applying) fails if a
// Service of that name exists that the cache has not seen yet, so a foreign
// Service is never taken over through a lagging cache.
func (r *listenerReconciler) createService(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured) (*corev1.Service, error) {
	u := want.DeepCopy()
	err := r.client.Create(ctx, u, client.FieldOwner(v1alpha1.FieldManager))
	if countWrite(controllerListener, "Service", "create", err) != nil {
		if apierrors.IsAlreadyExists(err) {
			return r.serviceOutsideCache(ctx, l, want)
		}
		return nil, fmt.Errorf("create service %s/%s for listener %s: %w", l.Namespace, want.GetName(), l.Name, err)
	}
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
		return nil, fmt.Errorf("read back service %s/%s: %w", l.Namespace, want.GetName(), err)
	}
	r.recorder.Eventf(l, svc, corev1.EventTypeNormal, EventServiceCreated, "Create", "Created Service %s", svc.Name)
	return svc, nil
}

// applyService updates the Service with server-side apply under the
// operator's field manager, so fields other managers set are kept and fields
// the operator stopped wanting are removed. The fields the operator set when
// it created the Service are first handed over to its apply manager, or an
// apply could not remove them.
func (r *listenerReconciler) applyService(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured, existing *corev1.Service) (*corev1.Service, error) {
	upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(existing, sets.New(v1alpha1.FieldManager), v1alpha1.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("hand over fields of service %s/%s to server-side apply: %w", existing.Namespace, existing.Name, err)
	}
	if upgrade != nil {
		err := r.client.Patch(ctx, existing.DeepCopy(), client.RawPatch(types.JSONPatchType, upgrade))
		if countWrite(controllerListener, "Service", "patch", err) != nil {
			if apierrors.IsConflict(err) {
				return nil, errRetrySoon
			}
			return nil, fmt.Errorf("hand over fields of service %s/%s to server-side apply: %w", existing.Namespace, existing.Name, err)
		}
	}
	u := want.DeepCopy()
	err = r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	if countWrite(controllerListener, "Service", "apply", err) != nil {
		return nil, fmt.Errorf("apply service %s/%s for listener %s: %w", l.Namespace, want.GetName(), l.Name, err)
	}
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
		return nil, fmt.Errorf("read back service %s/%s: %w", l.Namespace, want.GetName(), err)
	}
	r.recorder.Eventf(l, svc, corev1.EventTypeNormal, EventServiceUpdated, "Apply", "Updated Service %s", svc.Name)
	log.FromContext(ctx).V(1).Info("applied service", "service", svc.Name)
	return svc, nil
}

// awaitAllocations reads a new Service back until the API server has
// allocated what its addresses derive from (cluster IPs, node ports), for at
// most CreateWaitDuration; then it goes on with what is there, and the
// Service's own update event reconciles again later.
func (r *listenerReconciler) awaitAllocations(ctx context.Context, svc *corev1.Service, class *v1alpha1.ListenerClass) (*corev1.Service, error) {
	if allocated(svc, class) || r.opts.CreateWaitDuration <= 0 {
		return svc, nil
	}
	latest := svc
	err := wait.PollUntilContextTimeout(ctx, r.opts.CreatePollInterval, r.opts.CreateWaitDuration, false, func(ctx context.Context) (bool, error) {
		s := &corev1.Service{}
		if err := r.live.Get(ctx, client.ObjectKeyFromObject(svc), s); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		latest = s
		return allocated(s, class), nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("wait for service %s/%s: %w", svc.Namespace, svc.Name, ctx.Err())
	}
	return latest, nil
}

// allocated reports whether a Service has what its class's addresses need.
func allocated(svc *corev1.Service, class *v1alpha1.ListenerClass) bool {
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP == "" {
		return false
	}
	needNodePorts := class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort ||
		class.Spec.ServiceType == v1alpha1.ServiceTypeLoadBalancer && (svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts)
	if needNodePorts && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		for _, p := range svc.Spec.Ports {
			if p.NodePort == 0 {
				return false
			}
		}
	}
	return true
}

// deleteStaleServices removes Services this Listener controls under another
// name (e.g. left behind by an older naming scheme).
func (r *listenerReconciler) deleteStaleServices(ctx context.Context, l *v1alpha1.Listener, keep string) error {
	var owned corev1.ServiceList
	if err := r.client.List(ctx, &owned, client.InNamespace(l.Namespace), client.MatchingFields{indexServiceOwner: l.Name}); err != nil {
		return fmt.Errorf("list services of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	for i := range owned.Items {
		s := &owned.Items[i]
		if s.Name == keep || !metav1.IsControlledBy(s, l) {
			continue
		}
		err := r.client.Delete(ctx, s, client.Preconditions{UID: &s.UID})
		if countWrite(controllerListener, "Service", "delete", err) != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete stale service %s/%s of listener %s: %w", s.Namespace, s.Name, l.Name, err)
		}
		r.recorder.Eventf(l, s, corev1.EventTypeNormal, EventServiceDeleted, "Delete", "Deleted Service %s, which no longer belongs to this Listener", s.Name)
	}
	return nil
}

// servingNodes are the nodes a NodePort Listener is reachable through: those
// its volumes are pinned to and those running its endpoints.
func (r *listenerReconciler) servingNodes(ctx context.Context, l *v1alpha1.Listener, svcName string) ([]*corev1.Node, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &slices, client.InNamespace(l.Namespace), client.MatchingFields{indexSliceService: svcName}); err != nil {
		return nil, fmt.Errorf("list endpoint slices of service %s/%s: %w", l.Namespace, svcName, err)
	}
	nodeNames := endpointNodes(slices.Items, l.Spec.PublishNotReadyAddresses == nil || *l.Spec.PublishNotReadyAddresses)

	var claims corev1.PersistentVolumeClaimList
	if err := r.client.List(ctx, &claims, client.InNamespace(l.Namespace), client.MatchingFields{indexClaimListener: l.Name}); err != nil {
		return nil, fmt.Errorf("list claims of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	for _, c := range claims.Items {
		if c.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: c.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get volume %s of claim %s/%s: %w", c.Spec.VolumeName, c.Namespace, c.Name, err)
		}
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" && pv.Spec.ClaimRef.UID != c.UID {
			continue // bound to another claim of the same name
		}
		nodeNames = append(nodeNames, addresses.PinnedNodes(pv)...)
	}

	seen := map[string]bool{}
	var nodes []*corev1.Node
	for _, name := range nodeNames {
		if seen[name] {
			continue
		}
		seen[name] = true
		n := &corev1.Node{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get node %s: %w", name, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// updateStatus writes the status when it changed, and tells the user (by an
// event) when the Ready condition changed reason.
func (r *listenerReconciler) updateStatus(ctx context.Context, l *v1alpha1.Listener, st v1alpha1.ListenerStatus, v verdict) (conflict bool, err error) {
	st = withCondition(st, l.Status.Conditions, l.Generation, v)
	if statusEqual(st, l.Status) {
		return false, nil
	}
	var oldReason string
	if old := findCondition(l.Status.Conditions, v1alpha1.ConditionReady); old != nil {
		oldReason = old.Reason
	}
	updated := l.DeepCopy()
	updated.Status = st
	err = r.client.Status().Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager))
	if err == nil {
		r.written.wrote(client.ObjectKeyFromObject(l), updated.ResourceVersion, time.Now())
	}
	if countWrite(controllerListener, "Listener", "update-status", err) != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, fmt.Errorf("update status of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	// A Listener becoming ready for the first time already got a
	// ServiceCreated event; every other change of reason is news.
	if oldReason != v.reason && (oldReason != "" || !v.ready) {
		typ := corev1.EventTypeWarning
		if v.ready {
			typ = corev1.EventTypeNormal
		}
		r.recorder.Eventf(l, nil, typ, v.reason, "Reconcile", "%s", v.message)
	}
	return false, nil
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
