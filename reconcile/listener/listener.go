package listener

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"
	"github.com/listener-operator/listener-operator/reconcile/internal/foreign"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/options"

	corev1 "k8s.io/api/core/v1"
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

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
	"github.com/listener-operator/listener-operator/caches"
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

// portless is the verdict for a Listener without ports, whose Service the
// API server would refuse: it has no Service (the one it had is deleted,
// or it would keep exposure its class may no longer give) and publishes no
// address. A claim's own Listener takes its ports from the containers of
// its pods; those pods (admitted while the pod webhook, which refuses
// them, was down) get an event from the claim reconciler.
func portless(l *v1alpha1.Listener) verdict {
	owner := metav1.GetControllerOf(l)
	if owner == nil || owner.Kind != "PersistentVolumeClaim" {
		return verdict{reason: v1alpha1.ReasonInvalid, unpublish: true,
			message: "spec.ports is empty, so this Listener has no Service and publishes no address; list the ports its pods serve in spec.ports"}
	}
	return verdict{reason: v1alpha1.ReasonInvalid, unpublish: true, message: claimlistener.PortlessMessage(l.Name, owner.Name)}
}

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=get;list;watch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// listenerReconciler keeps a Listener's Service and status. It never
// writes pods: the takeover of another operator's Services is the takeover
// controller's (reconcile/takeover).
type listenerReconciler struct {
	client   client.Client // reads from the cache
	live     client.Reader // reads from the API server
	recorder events.EventRecorder
	opts     options.Options
	// written holds our status writes the cache has not shown yet.
	written ownWrites
	// gatewayAPI says whether the Gateway API's watches run (gatewayapi.go).
	gatewayAPI *gatewayAPIState
	// ranges serialises the writes in each class's node port range
	// (rangewrites.go).
	ranges rangeWrites
	// refusals backs off the rechecks of refused Services (outcome.go).
	refusals refusalBackoff
}

func (r *listenerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer metrics.ObserveReconcile(ControllerName, time.Now())
	l := &v1alpha1.Listener{}
	if err := r.client.Get(ctx, req.NamespacedName, l); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.refusals.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !l.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Our last status write may not have reached the cache yet.
	l.Status = r.written.latest(req.NamespacedName, l.ResourceVersion, l.Status, time.Now())
	o, err := r.reconcileService(ctx, l)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o.publish {
		o.requeueAfter = r.refusals.recheck(req.NamespacedName, o.verdict, o.requeueAfter)
		if err := r.publish(ctx, l, o); err != nil {
			return ctrl.Result{}, err
		}
	}
	return o.result()
}

// reconcileService brings the Listener's Service in line and computes the
// status to publish. Problems with the user's objects become a verdict, not
// an error: an error means "retry".
func (r *listenerReconciler) reconcileService(ctx context.Context, l *v1alpha1.Listener) (outcome, error) {
	if l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		// The user asked for no class: no Service, and no address stays
		// published (status, PodListeners, the next volume publish).
		if err := r.leaveAllClasses(ctx, l); err != nil { // gateway.go
			return outcome{}, err
		}
		return judged(verdict{reason: v1alpha1.ReasonNoClass, unpublish: true,
			message: "spec.className is not set, so the Listener has no Service and publishes no address; name a ListenerClass to expose it"}), nil
	}
	if end, err := r.refuseCollision(ctx, l); err != nil || end.ends() { // namecollision.go
		return end, err
	}
	class, awaiting, err := r.classOf(ctx, l)
	if err == nil {
		err = r.leaveGateway(ctx, l, class) // gateway.go
	}
	if err != nil || awaiting.ends() {
		return awaiting, err
	}
	// The class is policy, and one rule (service.Service) decides with the
	// webhook what the overrides may change: what it refuses is left out
	// of the Service, so exposure is never more than the class gives.
	hc, current, err := r.serviceInputs(ctx, l, class) // service.go
	if err != nil {
		return outcome{}, err
	}
	want, found, err := desiredService(l, class, serviceHostname(class, hc), current)
	if err != nil {
		return judged(verdict{reason: v1alpha1.ReasonInvalid, message: err.Error()}), nil
	}
	sh, end, err := r.shareLoadBalancer(ctx, l, class, want, current) // lbsharing.go
	if err != nil || end.ends() {
		return end, err
	}
	svc, end, err := r.ensureService(ctx, l, class, want, found, current)
	if err != nil || end.ends() {
		return end, err
	}
	r.ranges.forget(client.ObjectKeyFromObject(l), svc) // rangewrites.go
	if sh != nil && sh.held.ends() {
		return sh.held, nil
	}
	var nodes []*corev1.Node
	if class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort {
		if nodes, err = r.servingNodes(ctx, l); err != nil {
			return outcome{}, err
		}
	}
	st, v, problems := r.explainedStatus(ctx, observed{class: class, svc: svc, nodes: nodes, clusterDomain: r.opts.ClusterDomain}) // lbwarning.go
	if len(problems) > 0 {
		r.recorder.Eventf(l, nil, corev1.EventTypeWarning, v1alpha1.EventNodeAddressInvalid, "Publish", "%s", strings.Join(problems, "; "))
	}
	if class.Spec.Gateway != nil {
		if st.IngressAddresses, v, err = r.gatewayStatus(ctx, l, class, svc, hc.published()); err != nil { // gateway.go
			return outcome{}, err
		}
	}
	if v, err = r.withRefusedSelection(ctx, l, awaiting.verdict.or(v)); err != nil { // podselection.go
		return outcome{}, err
	}
	if refused := found.refused; len(refused) > 0 {
		// The Service serves, but not as the Listener asked: say what was
		// left out and how to fix it.
		v = verdict{reason: v1alpha1.ReasonInvalid, message: fmt.Sprintf(
			"Service %s was made without the parts of spec.objectOverrides that ListenerClass %q does not allow (remove them from the Listener to clear this): %s",
			svc.Name, class.Name, refused.ToAggregate().Error())}
	}
	st = r.withAddressFeatures(st, l, class, hc)                                                                                           // hostname.go
	st.Conditions = withFeatureCondition(st.Conditions, v1alpha1.ConditionNodePortsInRange, rangeCondition(l, class, svc))                 // noderange.go
	st.Conditions = withFeatureCondition(st.Conditions, v1alpha1.ConditionTenantMetadataAllowed, tenantMetadataCondition(l, class, found)) // tenantmeta.go
	st.Conditions = withFeatureCondition(st.Conditions, v1alpha1.ConditionLoadBalancerShared, sharingCondition(l, sh, svc))                // lbsharing.go
	return settled(st, v), nil
}

// classOf reads the Listener's class and checks both. A problem with them
// (a missing class, objects the webhooks would have refused) ends the
// reconcile with the Listener's verdict (the outcome returned; the zero
// outcome when there is none).
func (r *listenerReconciler) classOf(ctx context.Context, l *v1alpha1.Listener) (*v1alpha1.ListenerClass, outcome, error) {
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			// Only possible while the webhooks were down (the in-use guard
			// refuses the delete, counting status.className): the Service
			// stays as last made, and so do its addresses.
			return nil, judged(verdict{reason: v1alpha1.ReasonClassNotFound,
				message: fmt.Sprintf("ListenerClass %q does not exist; the Service stays as ListenerClass %q made it until it does, or spec.className names another class", *l.Spec.ClassName, l.Status.ClassName)}), nil
		}
		return nil, outcome{}, fmt.Errorf("get listener class %s: %w", *l.Spec.ClassName, err)
	}
	// The webhooks refuse such objects at admission; these checks catch the
	// ones admitted before the webhooks ran, or while they were down.
	errs := validation.ListenerClass(class)
	errs = append(errs, validation.Listener(l, validation.NewClassNames(class.Name))...)
	// Only the operator's Listeners of claims a StatefulSet made select a
	// pod by name (podselection.go).
	podErrs, awaiting, err := r.statefulSetPodErrors(ctx, l)
	if err != nil || awaiting && len(errs) == 0 && len(l.Spec.Ports) > 0 {
		return class, awaitingStatefulSet(podErrs), err // decided later, once the Service follows the class
	}
	if errs = append(errs, podErrs...); len(errs) > 0 {
		return nil, judged(verdict{reason: v1alpha1.ReasonInvalid, message: errs.ToAggregate().Error()}), nil
	}
	if len(l.Spec.Ports) == 0 {
		if err := r.deleteStaleServices(ctx, l, ""); err != nil {
			return nil, outcome{}, err
		}
		return nil, judged(portless(l)), nil
	}
	return class, outcome{}, nil
}

// ensureService makes the Listener's Service what want says (creating,
// applying, deleting stale ones) and returns it. A problem the user has to
// fix, or a cache found behind, ends the reconcile (the outcome returned;
// the zero outcome when it goes on). svc is the Service of want's name as
// the cache has it now (nil: none), read once per reconcile (serviceInputs).
func (r *listenerReconciler) ensureService(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, want *unstructured.Unstructured, found serviceFindings, svc *corev1.Service) (*corev1.Service, outcome, error) {
	svcName := want.GetName()
	if err := r.deleteStaleServices(ctx, l, svcName); err != nil {
		return nil, outcome{}, err
	}
	if svc != nil {
		// A predecessor's Service is taken over (owner.go): applied
		// below with l's owner reference, keeping its addresses.
		own, err := r.isOwn(ctx, svc, l)
		if err != nil {
			return nil, outcome{}, err
		}
		if !own {
			return nil, judged(foreignServiceVerdict(svcName)), nil
		}
	}
	// A Service another operator made selects pods its own way: its
	// selector stays until the takeover controller switches it (reconcile/takeover).
	if err := foreign.LeaveForeignSelector(want, svc); err != nil {
		return nil, outcome{}, err
	}
	if svc != nil {
		upToDate, err := serviceUpToDate(svc, want)
		if err != nil || upToDate {
			return svc, outcome{}, err
		}
	}
	var err error
	created := svc == nil
	if created {
		svc, err = r.createStickyService(ctx, l, class, want) // nodeports.go
		if apierrors.IsAlreadyExists(err) {
			svc, err = r.serviceOutsideCache(ctx, l, want) // foreignservice.go
			created = false
		}
	} else if _, _, moved := loadBalancerClassChange(svc, want); nodePortRange(class) != nil && !moved {
		svc, err = r.writeInRange(ctx, l, class, want, svc) // noderange.go
	} else {
		// A new loadBalancerClass is made anew, range or not: the
		// Service is recreated, in the range, by createStickyService.
		svc, err = r.applyOrRecreate(ctx, l, want, svc) // lbclass.go
	}
	if err != nil {
		if v, ok := asForeignService(err); ok {
			return nil, judged(v), nil
		}
		if o, ok := rangeShort(err); ok { // noderange.go
			return nil, o, nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			// The API server rejected what the class and overrides make:
			// retrying will not help until someone edits them.
			return nil, judged(verdict{reason: v1alpha1.ReasonInvalid, message: fmt.Sprintf("Service %s was rejected: %v", svcName, err)}), nil
		}
		if v, ok := serviceRefused(svcName, err); ok {
			return nil, judged(v), nil
		}
		return nil, outcome{}, err
	}
	if svc == nil {
		return nil, cacheBehind(), nil
	}
	if created {
		if svc, err = r.awaitAllocations(ctx, svc, class); err != nil {
			return nil, outcome{}, err
		}
	}
	r.recordFindings(l, svc, class, found) // tenantmeta.go
	return svc, outcome{}, nil
}

// serviceRefused is the verdict on a Service the API server refused to
// create or update for a reason outside the Listener: Forbidden (a
// ResourceQuota on Services or node ports, an admission policy, the
// operator's own permissions) or an internal error (the cluster's Service IP
// or node port range is full: "range is full"). Without it such a Listener
// had no status at all, and only the operator's log said why.
func serviceRefused(name string, err error) (verdict, bool) {
	if !apierrors.IsForbidden(err) && !apierrors.IsInternalError(err) {
		return verdict{}, false
	}
	reason := apiAnswer(err) // gateway.go
	return verdict{reason: v1alpha1.ReasonServiceRefused, message: fmt.Sprintf(
		"the API server refused Service %s: %s; the operator tries again when a ResourceQuota of the namespace changes, and at least every %s: free or raise what it names (a ResourceQuota on services or node ports, an admission policy, the cluster's Service IP or node port range)",
		name, reason, ServiceRefusedRecheckMax)}, true
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

// createService creates a new Service. Creating (not applying) fails if a
// Service of that name exists that the cache has not seen yet, so a foreign
// Service is never taken over through a lagging cache.
func (r *listenerReconciler) createService(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured) (*corev1.Service, error) {
	u := want.DeepCopy()
	err := r.client.Create(ctx, u, client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Service", "create", err) != nil {
		// AlreadyExists (a Service the cache does not show) is decided by
		// serviceOutsideCache.
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
// apply could not remove them (handOver).
func (r *listenerReconciler) applyService(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured, existing *corev1.Service) (*corev1.Service, error) {
	if caches.HandoverPending(existing) {
		if done, err := r.handOver(ctx, existing); !done || err != nil {
			return nil, err
		}
	}
	u := want.DeepCopy()
	err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	if metrics.CountWrite(ControllerName, "Service", "apply", err) != nil {
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

// handOver hands the fields the operator's field manager owns in the
// Service through an Update (it created it) over to its apply manager. The
// cache keeps the managedFields of such a Service without their field sets
// (caches.TrimService), and the patch rewrites the whole list: it is made
// from the Service as the API server has it, and applies only to that
// resourceVersion. done is false when the Service changed in between (the
// reconcile is retried).
func (r *listenerReconciler) handOver(ctx context.Context, cached *corev1.Service) (done bool, err error) {
	svc := &corev1.Service{}
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(cached), svc); err != nil {
		return false, fmt.Errorf("read service %s/%s to hand its fields over to server-side apply: %w", cached.Namespace, cached.Name, err)
	}
	upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(svc, sets.New(v1alpha1.FieldManager), v1alpha1.FieldManager)
	if err != nil {
		return false, fmt.Errorf("hand over fields of service %s/%s to server-side apply: %w", svc.Namespace, svc.Name, err)
	}
	if upgrade == nil {
		return true, nil // applied since the cache saw it
	}
	err = r.client.Patch(ctx, svc, client.RawPatch(types.JSONPatchType, upgrade))
	if metrics.CountWrite(ControllerName, "Service", "patch", err) != nil {
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("hand over fields of service %s/%s to server-side apply: %w", svc.Namespace, svc.Name, err)
	}
	return true, nil
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
	owned, err := lookup.ServicesOfListener(ctx, r.client, l)
	if err != nil {
		return err
	}
	for i := range owned {
		s := &owned[i]
		if s.Name == keep || !metav1.IsControlledBy(s, l) {
			continue
		}
		err := r.client.Delete(ctx, s, client.Preconditions{UID: &s.UID})
		if metrics.CountWrite(ControllerName, "Service", "delete", err) != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete stale service %s/%s of listener %s: %w", s.Namespace, s.Name, l.Name, err)
		}
		r.recorder.Eventf(l, s, corev1.EventTypeNormal, EventServiceDeleted, "Delete", "Deleted Service %s, which no longer belongs to this Listener", s.Name)
	}
	if keep == "" {
		r.ranges.forget(client.ObjectKeyFromObject(l), nil) // no Service left
	}
	return nil
}
