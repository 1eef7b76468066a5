package nodeloss

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=nodes;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/status,verbs=patch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

const controllerName = "pinned-node-loss"

// Cache indexes of this controller (names distinct from reconcile's), and
// the pod index it shares with reconcile (registered by
// caches.ReconcilerView).
const (
	indexPodClaim   = caches.IndexPodClaim
	indexPVNode     = "nodeloss.pv.node"
	indexClaimClass = "nodeloss.claim.class"
)

// conflictRetry is how soon a reconcile that lost a write race runs again.
const conflictRetry = time.Second

// SetupWithManager registers the node-loss controller with mgr (leader
// only). With opts.Enabled false it registers nothing.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	if err := opts.validate(); err != nil {
		return fmt.Errorf("node-loss options: %w", err)
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	if err := addIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r := &reconciler{
		client:   mgr.GetClient(),
		recorder: mgr.GetEventRecorder(v1alpha1.FieldManager),
		opts:     opts,
		now:      time.Now,
		noted:    map[types.NamespacedName]map[string]string{},
		released: map[types.NamespacedName]string{},
	}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
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
			var reqs []ctrl.Request
			for _, claim := range names.PodClaimNames(o.(*corev1.Pod)) {
				reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: claim}})
			}
			return reqs
		})).
		Watches(&v1alpha1.Listener{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			if claim := o.GetAnnotations()[v1alpha1.AnnotationHandoverToClaim]; claim != "" {
				return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: claim}}}
			}
			return nil
		})).
		Watches(&v1alpha1.ListenerClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return claimsOfClass(ctx, c, o.GetName())
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.wrap(controllerName, r))
}

func addIndexes(ctx context.Context, fi client.FieldIndexer) error {
	indexes := []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&corev1.PersistentVolume{}, indexPVNode, func(o client.Object) []string {
			if n := addresses.PinnedNode(o.(*corev1.PersistentVolume)); n != "" {
				return []string{n}
			}
			return nil
		}},
		{&corev1.PersistentVolumeClaim{}, indexClaimClass, func(o client.Object) []string {
			if use, ok := claims.OfClaim(o.(*corev1.PersistentVolumeClaim)); ok && use.Own {
				return []string{use.Class}
			}
			return nil
		}},
	}
	for _, ix := range indexes {
		if err := fi.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return fmt.Errorf("index %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
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

func claimOfVolume(pv *corev1.PersistentVolume) []ctrl.Request {
	if ref := pv.Spec.ClaimRef; ref != nil && addresses.PinnedNode(pv) != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	return nil
}

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

func claimsOfClass(ctx context.Context, c client.Reader, class string) []ctrl.Request {
	var claims corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claims, client.MatchingFields{indexClaimClass: class}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list claims of class", "class", class)
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(claims.Items))
	for i := range claims.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return reqs
}

// reconciler handles one claim name at a time: the claim (if it exists),
// the Listener handed over to it (if it does not), and the pods that mount
// it.
type reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	opts     Options
	now      func() time.Time

	mu sync.Mutex
	// noted remembers, per claim, the last event note per object and
	// reason, so that a reconcile loop does not repeat an event.
	noted map[types.NamespacedName]map[string]string
	// released remembers the node each claim was released from by this
	// process, so that its pods may be recreated even when its class can
	// no longer be read (the claim is gone).
	released map[types.NamespacedName]string
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.now()
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.client.Get(ctx, req.NamespacedName, pvc)
	switch {
	case apierrors.IsNotFound(err):
		pvc = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get claim %s: %w", req.NamespacedName, err)
	case !claims.IsListenerClaim(pvc):
		// Never touch other claims, not even their pods.
		return ctrl.Result{}, nil
	}

	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(req.Namespace), client.MatchingFields{indexPodClaim: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods of claim %s: %w", req.NamespacedName, err)
	}

	var (
		res ctrl.Result
		pin string // the node the current claim is pinned to
	)
	switch {
	case pvc == nil:
		clearLost(req.Namespace, req.Name)
		res, err = r.handover(ctx, req.NamespacedName, pods.Items, now)
	case pvc.DeletionTimestamp.IsZero():
		res, pin, err = r.claim(ctx, pvc, pods.Items, now)
	default:
		res, err = r.terminating(ctx, pvc, pods.Items)
		pin = "-" // a claim on its way out pins nothing new
	}
	if err != nil {
		return res, err
	}
	podRes, err := r.pods(ctx, req.NamespacedName, pvc, pin, pods.Items)
	if err != nil {
		return podRes, err
	}
	return sooner(res, podRes), nil
}

// claim handles a listener claim that is not being deleted. It returns the
// node the claim is pinned to after the reconcile ("" when none, released).
func (r *reconciler) claim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pods []corev1.Pod, now time.Time) (ctrl.Result, string, error) {
	key := client.ObjectKeyFromObject(pvc)
	node, use, err := r.pinnedNodeOf(ctx, pvc)
	if err != nil || node == "" {
		clearLost(key.Namespace, key.Name)
		return ctrl.Result{}, "", err
	}
	info, err := r.claimInfo(ctx, pvc, use, node)
	if err != nil {
		return ctrl.Result{}, node, err
	}
	n := &corev1.Node{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: node}, n); {
	case apierrors.IsNotFound(err):
		n = nil
	case err != nil:
		return ctrl.Result{}, node, fmt.Errorf("get node %s: %w", node, err)
	}
	d := decide(info, stateOf(n), now)
	res := ctrl.Result{RequeueAfter: d.recheck}
	listener, err := r.ownListener(ctx, pvc, use)
	if err != nil {
		return res, node, err
	}

	switch {
	case !d.lost && !d.release:
		clearLost(key.Namespace, key.Name)
		r.forget(key)
		if listener != nil {
			err = r.setCondition(ctx, listener, metav1.ConditionTrue, ReasonAvailable,
				fmt.Sprintf("listener claim %s is pinned to node %s, which is available", pvc.Name, node), true)
		}
		return res, node, err

	case !d.release:
		setLost(key.Namespace, key.Name, node, d.remedy)
		r.event(key, pvc, orNil(listener), corev1.EventTypeWarning, ReasonNodeLost, "Explain", d.message)
		for i := range pods {
			if pods[i].Spec.NodeName == "" && pods[i].DeletionTimestamp.IsZero() {
				r.event(key, &pods[i], pvc, corev1.EventTypeWarning, ReasonNodeLost, "Explain", d.message)
			}
		}
		if listener != nil {
			err = r.setCondition(ctx, listener, metav1.ConditionFalse, ReasonNodeLost, d.message, false)
		}
		return res, node, err
	}

	// Release: hand the Listener over, then delete the claim.
	if listener != nil {
		if err := r.handOver(ctx, listener, pvc); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, node, nil
			}
			return res, node, err
		}
	}
	// Orphan: the garbage collector removes the claim's owner reference
	// from its Listener before the claim goes, instead of deleting the
	// Listener with it. The Listener is never without a controller while
	// the old claim is live, so it cannot be adopted back by it.
	err = r.client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID, ResourceVersion: &pvc.ResourceVersion}, client.PropagationPolicy(metav1.DeletePropagationOrphan))
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, "", nil
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: conflictRetry}, node, nil
	case err != nil:
		return res, node, fmt.Errorf("delete claim %s: %w", key, err)
	}
	releasesTotal.WithLabelValues(d.trigger).Inc()
	r.mu.Lock()
	r.released[key] = node
	r.mu.Unlock()
	clearLost(key.Namespace, key.Name)
	r.event(key, pvc, orNil(listener), corev1.EventTypeNormal, ReasonReleased, "Delete", d.message)
	if listener != nil {
		r.event(key, listener, pvc, corev1.EventTypeNormal, ReasonReleased, "HandOver", d.message)
		if err := r.setCondition(ctx, listener, metav1.ConditionFalse, ReasonReleased,
			fmt.Sprintf("%s; handed over to the claim recreated as %s", d.message, pvc.Name), false); err != nil && !apierrors.IsConflict(err) {
			return res, "", err
		}
	}
	return res, "", nil
}

// terminating handles a listener claim on its way out: if a pod still holds
// it on a node that is not usable, that pod is what keeps everything stuck,
// and only its kubelet or an out-of-service taint can let it go.
func (r *reconciler) terminating(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pods []corev1.Pod) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(pvc)
	stuck := false
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		n := &corev1.Node{}
		err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, n)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get node %s: %w", p.Spec.NodeName, err)
		}
		if err == nil && !stateOf(n).ready {
			stuck = true
			setLost(key.Namespace, key.Name, p.Spec.NodeName, RemedyOutOfServiceTaint)
			r.event(key, p, pvc, corev1.EventTypeWarning, ReasonNodeLost, "Explain", fmt.Sprintf(
				"listener claim %s/%s was released, but pod %s still holds it on node %s, which is not Ready; the pod (and its replacement) waits until kubelet on %s confirms it stopped. "+
					"If the machine is down, mark it: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (the operator never force-deletes pods)",
				pvc.Namespace, pvc.Name, p.Name, p.Spec.NodeName, p.Spec.NodeName, p.Spec.NodeName))
		}
	}
	if !stuck {
		clearLost(key.Namespace, key.Name)
	}
	return ctrl.Result{}, nil
}

// pods deletes the Pending pods of the claim that still require a node the
// claim is no longer pinned to, when that node is not usable and the claim
// was released (by policy or by hand), so that their controller recreates
// them without the requirement. pin is the node the current claim is
// pinned to ("" none, "-" the claim is terminating).
func (r *reconciler) pods(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, pin string, pods []corev1.Pod) (ctrl.Result, error) {
	if pin == "-" {
		// The claim still exists: a pod recreated now would be pinned
		// again by the webhook. Wait for it to go.
		return ctrl.Result{}, nil
	}
	var res ctrl.Result
	r.mu.Lock()
	releasedFrom, released := r.released[key]
	r.mu.Unlock()
	if pvc == nil && !released {
		// Released by an earlier leader: its Listener says so.
		l := &v1alpha1.Listener{}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: names.ClaimListenerName(key.Name)}, l)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get listener %s: %w", key, err)
		}
		released = err == nil && l.Annotations[v1alpha1.AnnotationHandoverToClaim] == key.Name && metav1.GetControllerOf(l) == nil
	}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		lost, err := r.staleRequirement(ctx, p, pin)
		if err != nil {
			return res, err
		}
		var why string
		switch {
		case lost != "":
			allowed, err := r.releaseAllowed(ctx, key, pvc, lost)
			if err != nil {
				return res, err
			}
			if !allowed {
				r.event(key, p, orNilClaim(pvc), corev1.EventTypeWarning, ReasonNodeLost, "Explain", fmt.Sprintf(
					"pod %s requires node %s, which is gone, and its listener claim %s is no longer pinned there; delete the pod so that its controller recreates it without that requirement",
					p.Name, lost, key.Name))
				continue
			}
			why = fmt.Sprintf("it requires node %s, which is gone, and its listener claim %s was released", lost, key.Name)
		case pvc == nil && released:
			// A StatefulSet recreates the missing claim of a Pending
			// pod only when it next syncs that pod; a new pod gets its
			// claims at once.
			why = fmt.Sprintf("its listener claim %s was released from its lost node %s and is recreated with the pod", key.Name, releasedFrom)
		default:
			continue
		}
		if metav1.GetControllerOf(p) == nil {
			setLost(key.Namespace, key.Name, cmp.Or(lost, releasedFrom), RemedyDeletePod)
			r.event(key, p, orNilClaim(pvc), corev1.EventTypeWarning, ReasonNodeLost, "Explain", fmt.Sprintf(
				"pod %s cannot start: %s; the pod has no controller to recreate it: delete it and create it again", p.Name, why))
			continue
		}
		// Not a force delete: an unscheduled pod has nothing to stop, so
		// the API server removes it at once anyway.
		err = r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		podsRecreatedTotal.Inc()
		r.event(key, p, orNilClaim(pvc), corev1.EventTypeNormal, ReasonPodRecreated, "Delete", fmt.Sprintf(
			"deleted Pending pod %s: %s; its controller recreates it (and the claim) without the old node", p.Name, why))
	}
	return res, nil
}

// staleRequirement is the first node the pod's listener hostname affinity
// requires that is not pin (the claim's current node) and is not usable,
// or "".
func (r *reconciler) staleRequirement(ctx context.Context, p *corev1.Pod, pin string) (string, error) {
	for _, m := range claims.PinnedNodes(p) {
		if m == pin {
			continue
		}
		n := &corev1.Node{}
		err := r.client.Get(ctx, types.NamespacedName{Name: m}, n)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("get node %s: %w", m, err)
		}
		if err == nil && stateOf(n).usable() {
			continue
		}
		return m, nil
	}
	return "", nil
}

// orNilClaim turns a nil claim into a nil interface.
func orNilClaim(c *corev1.PersistentVolumeClaim) runtime.Object {
	if c == nil {
		return nil
	}
	return c
}

// releaseAllowed says whether a pod of the claim that requires the lost
// node may be recreated: the claim was released from it by this process,
// or the claim's class (read from the claim or the handed-over Listener)
// releases pins.
func (r *reconciler) releaseAllowed(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, node string) (bool, error) {
	r.mu.Lock()
	from, ok := r.released[key]
	r.mu.Unlock()
	if ok && from == node {
		return true, nil
	}
	class := ""
	if pvc != nil {
		class = claims.Of(pvc.Name, pvc.Annotations).Class
	} else {
		l := &v1alpha1.Listener{}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: names.ClaimListenerName(key.Name)}, l)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("get listener %s/%s: %w", key.Namespace, key.Name, err)
		}
		if l.Annotations[v1alpha1.AnnotationHandoverToClaim] != key.Name || l.Spec.ClassName == nil {
			return false, nil
		}
		class = *l.Spec.ClassName
	}
	if class == "" {
		return false, nil
	}
	release, _, err := r.policy(ctx, class)
	return err == nil && release != v1alpha1.PinnedNodeReleaseNever, client.IgnoreNotFound(err)
}

// handover deals with a claim name that has no claim: a Listener handed over
// to it waits for it while a pod that will bring the claim back exists, and
// is deleted once it has waited longer than the handover timeout.
func (r *reconciler) handover(ctx context.Context, key types.NamespacedName, pods []corev1.Pod, now time.Time) (ctrl.Result, error) {
	l := &v1alpha1.Listener{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: names.ClaimListenerName(key.Name)}, l)
	if apierrors.IsNotFound(err) {
		r.forget(key)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get listener %s: %w", key, err)
	}
	if l.Annotations[v1alpha1.AnnotationHandoverToClaim] != key.Name || metav1.GetControllerOf(l) != nil || !l.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	since := now
	if c := meta.FindStatusCondition(l.Status.Conditions, ConditionPinnedNodesAvailable); c != nil && c.Reason == ReasonReleased {
		since = c.LastTransitionTime.Time
	} else {
		msg := fmt.Sprintf("handed over to claim %s, which does not exist yet", key.Name)
		if err := r.setCondition(ctx, l, metav1.ConditionFalse, ReasonReleased, msg, false); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
	}
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			// A pod mounts the claim: its controller brings the claim
			// back (a StatefulSet creates missing claims of its pods).
			return ctrl.Result{RequeueAfter: r.opts.HandoverTimeout}, nil
		}
	}
	if wait := r.opts.HandoverTimeout - now.Sub(since); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	err = r.client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("delete handed-over listener %s: %w", key, err)
	}
	handoversExpiredTotal.Inc()
	r.recorder.Eventf(l, nil, corev1.EventTypeNormal, ReasonHandoverExpired, "Delete",
		"deleted Listener %s: it was handed over to claim %s, which did not come back within %s and no pod mounts it", l.Name, key.Name, r.opts.HandoverTimeout)
	r.forget(key)
	return ctrl.Result{}, nil
}

// pinnedNodeOf is the node a claim's volume is pinned to ("" when it is not
// bound or not pinned), and the Listener the claim uses (claims.Bound: a
// bound volume keeps the one recorded on it).
func (r *reconciler) pinnedNodeOf(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, claims.Use, error) {
	use := claims.Of(pvc.Name, pvc.Annotations)
	if pvc.Spec.VolumeName == "" {
		return "", use, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", use, client.IgnoreNotFound(err)
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID != "" && ref.UID != pvc.UID {
		return "", use, nil // bound to an earlier claim of this name
	}
	return addresses.PinnedNode(pv), claims.Bound(pvc, use, pv), nil
}

// claimInfo gathers what decide needs about a pinned claim that uses use
// (pinnedNodeOf).
func (r *reconciler) claimInfo(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use, node string) (claimInfo, error) {
	info := claimInfo{namespace: pvc.Namespace, name: pvc.Name, node: node, manual: pvc.Annotations[AnnotationReleasePinnedNode]}
	info.class, info.listener = use.Class, use.Listener
	if named := use.Listener; named != "" && use.Class == "" {
		// A shared Listener's class decides (and that of the claim's own
		// one when the claim no longer names it: claims.Bound).
		l := &v1alpha1.Listener{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: pvc.Namespace, Name: named}, l); err != nil && !apierrors.IsNotFound(err) {
			return info, fmt.Errorf("get listener %s/%s: %w", pvc.Namespace, named, err)
		} else if err == nil && l.Spec.ClassName != nil {
			info.class = *l.Spec.ClassName
		}
	}
	var err error
	info.release, info.timeout, err = r.policy(ctx, info.class)
	if apierrors.IsNotFound(err) {
		// A class that is gone has no policy: its default applies.
		info.release, info.timeout, err = v1alpha1.PinnedNodeReleaseNodeDeleted, 0, nil
	}
	return info, err
}

// policy is a class's effective pinnedNodeLoss.
func (r *reconciler) policy(ctx context.Context, class string) (v1alpha1.PinnedNodeRelease, time.Duration, error) {
	lc := &v1alpha1.ListenerClass{}
	if class == "" {
		return v1alpha1.PinnedNodeReleaseNodeDeleted, 0, nil
	}
	if err := r.client.Get(ctx, types.NamespacedName{Name: class}, lc); err != nil {
		return "", 0, fmt.Errorf("get listener class %s: %w", class, err)
	}
	release, timeout := lc.Spec.EffectivePinnedNodeLoss()
	return release, timeout, nil
}

// ownListener is the claim's own Listener (of use, from pinnedNodeOf) if it
// exists and the claim controls it (shared Listeners are not the claim's to
// hand over).
func (r *reconciler) ownListener(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use) (*v1alpha1.Listener, error) {
	if !use.Own {
		return nil, nil
	}
	l := &v1alpha1.Listener{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: pvc.Namespace, Name: use.Listener}, l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get listener %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if !metav1.IsControlledBy(l, pvc) {
		return nil, nil
	}
	return l, nil
}

// handOver names the claim in the Listener's handover annotation, so that
// the claim recreated under the same name adopts it once the claim's
// deletion (with orphan propagation) has removed the claim's controller
// reference. While the old claim controls it, nobody adopts it.
func (r *reconciler) handOver(ctx context.Context, l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim) error {
	if l.Annotations[v1alpha1.AnnotationHandoverToClaim] == pvc.Name {
		return nil
	}
	updated := l.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[v1alpha1.AnnotationHandoverToClaim] = pvc.Name
	if err := r.client.Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("hand listener %s/%s over: %w", l.Namespace, l.Name, err)
	}
	updated.DeepCopyInto(l)
	return nil
}

// setCondition writes the PinnedNodesAvailable condition. onlyIfPresent
// leaves Listeners that never lost a node without it. The transition time
// moves when the status or the reason changes (the handover timeout counts
// from the Released transition).
func (r *reconciler) setCondition(ctx context.Context, l *v1alpha1.Listener, status metav1.ConditionStatus, reason, message string, onlyIfPresent bool) error {
	old := meta.FindStatusCondition(l.Status.Conditions, ConditionPinnedNodesAvailable)
	if old == nil && onlyIfPresent {
		return nil
	}
	if old != nil && old.Status == status && old.Reason == reason && old.Message == message {
		return nil
	}
	t := metav1.NewTime(r.now())
	if old != nil && old.Status == status && old.Reason == reason {
		t = old.LastTransitionTime
	}
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&metav1.Condition{
		Type: ConditionPinnedNodesAvailable, Status: status, Reason: reason, Message: truncate(message),
		ObservedGeneration: l.Generation, LastTransitionTime: t,
	})
	if err != nil {
		return fmt.Errorf("condition of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	// Server-side apply of this condition alone, under this controller's
	// own field manager: the Listener controller's fields and conditions
	// are left as they are, whatever this reconcile's copy of them says.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener",
		"metadata": map[string]any{"namespace": l.Namespace, "name": l.Name, "uid": string(l.UID)},
		"status":   map[string]any{"conditions": []any{cond}},
	}}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(StatusFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply condition %s of listener %s/%s: %w", ConditionPinnedNodesAvailable, l.Namespace, l.Name, err)
	}
	updated := &v1alpha1.Listener{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, updated); err != nil {
		return fmt.Errorf("read back listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	updated.DeepCopyInto(l)
	return nil
}

// StatusFieldManager is the field manager of the condition this controller
// writes on Listeners (server-side apply), distinct from the Listener
// controller's.
const StatusFieldManager = v1alpha1.FieldManager + "-node-loss"

// truncate keeps a condition message within the API's 32768 bytes.
func truncate(s string) string {
	const max = 32768
	if len(s) > max {
		return s[:max]
	}
	return s
}

// event records an event unless the same note was recorded for the same
// object and reason before (reconciles repeat; events should not).
func (r *reconciler) event(key types.NamespacedName, regarding, related runtime.Object, eventType, reason, action, note string) {
	obj, ok := regarding.(client.Object)
	if !ok {
		return
	}
	id := string(obj.GetUID()) + "/" + reason
	r.mu.Lock()
	seen := r.noted[key]
	if seen == nil {
		seen = map[string]string{}
		r.noted[key] = seen
	}
	dup := seen[id] == note
	seen[id] = note
	r.mu.Unlock()
	if dup {
		return
	}
	r.recorder.Eventf(regarding, related, eventType, reason, action, "%s", note)
}

// orNil turns a nil Listener into a nil interface, not an interface
// holding a nil pointer.
func orNil(l *v1alpha1.Listener) runtime.Object {
	if l == nil {
		return nil
	}
	return l
}

// forget drops what was remembered about a claim once it is settled.
func (r *reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.noted, key)
	delete(r.released, key)
	r.mu.Unlock()
}

// sooner combines two results, keeping the earlier requeue.
func sooner(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	}
	return b
}
