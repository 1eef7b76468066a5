package takeover

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/foreign"
	"github.com/listener-operator/listener-operator/reconcile/internal/labelpatch"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/options"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// The takeover controller switches a Service another operator made (see
// reconcile/internal/foreign) from that operator's pod selector to this one's, and it alone
// writes pods for it: label first, switch second.
//
// The reconcilers' cache holds only pods with the listener-volume label,
// and of their labels only the operator's (caches.PodLabelKept): the other
// operator's pods may have neither. So the first look at a Service with a
// foreign selector lists the pods that carry its operator label from the API
// server, once (per Service and selector, per leader), and labels them with
// the listener-volume label and this operator's selector labels: from then
// on the cache holds them, and their events (and the Service's and
// Listener's) wake the controller. Pods labelled later by the other
// operator alone do not exist once it is uninstalled; should one appear
// without the listener-volume label, the relabel scan (reconcile/pod/relabel.go) gives it
// that label, and its event brings the takeover back.
// Only a selector the cache cannot decide (the operator's wants a label the
// pods' cached copies drop and the foreign one does not select by, e.g.
// spec.extraPodSelectorLabels added since) is read live again, after a
// wait that doubles up to takeoverMaxRecheck.

// ControllerName names the takeover controller in metrics and logs.
const ControllerName = "service-takeover"

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;patch

// takeoverRecheck is the first wait of a Listener whose Service cannot
// switch yet. Each further wait doubles, up to takeoverMaxRecheck.
const (
	takeoverRecheck    = 2 * time.Second
	takeoverMaxRecheck = 5 * time.Minute
)

// EventTakeoverPending is recorded on a Listener each time its Service's
// switch to the operator's selector has to wait again.
const EventTakeoverPending = "TakeoverPending"

// takeoverDelay is the wait after attempts earlier waits: takeoverRecheck
// doubled each time, capped at takeoverMaxRecheck.
func takeoverDelay(attempts int) time.Duration {
	d := takeoverRecheck
	for range attempts {
		if d >= takeoverMaxRecheck/2 {
			return takeoverMaxRecheck
		}
		d *= 2
	}
	return d
}

// takeoverBackoff counts, per Listener, the takeover waits since its last
// progress. Entries go when the switch happens, the Listener no longer
// needs one, or it is deleted.
type takeoverBackoff struct {
	mu       sync.Mutex
	attempts map[types.NamespacedName]int
	until    map[types.NamespacedName]time.Time
}

// wait records one more wait for key and returns how long it is.
func (b *takeoverBackoff) wait(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.attempts == nil {
		b.attempts = map[types.NamespacedName]int{}
		b.until = map[types.NamespacedName]time.Time{}
	}
	d := takeoverDelay(b.attempts[key])
	b.attempts[key]++
	b.until[key] = time.Now().Add(d)
	return d
}

// remaining is what is left at now of key's current wait.
func (b *takeoverBackoff) remaining(key types.NamespacedName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.until[key].Sub(now), 0)
}

// after is the current wait of key (the one wait last returned).
func (b *takeoverBackoff) after(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return takeoverDelay(max(b.attempts[key]-1, 0))
}

// forget drops key's count.
func (b *takeoverBackoff) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, key)
	delete(b.until, key)
}

// sweeps remembers the Services whose pods were listed live and labelled,
// by UID, with the selector they were listed by.
type sweeps struct {
	mu   sync.Mutex
	done map[types.UID]string
}

func (s *sweeps) swept(svc *corev1.Service) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[svc.UID] == labels.Set(svc.Spec.Selector).String()
}

func (s *sweeps) record(svc *corev1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = map[types.UID]string{}
	}
	s.done[svc.UID] = labels.Set(svc.Spec.Selector).String()
}

func (s *sweeps) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.done, uid)
}

// takeoverReconciler switches the selectors of one Listener's Service.
type takeoverReconciler struct {
	client   client.Client // reads from the cache; pod labels, selector patches
	live     client.Reader // the sweep's list of pods
	recorder events.EventRecorder
	backoff  takeoverBackoff
	sweeps   sweeps
}

// Setup registers the takeover controller with mgr.
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	r := &takeoverReconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), recorder: recorder}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.Listener{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return listenerOfForeignService(o.(*corev1.Service))
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return foreign.ListenersOfPod(o)
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.Wrapped(ControllerName, r))
}

// listenerOfForeignService maps a Service that selects pods by a foreign
// listener label to the Listener controlling it.
func listenerOfForeignService(svc *corev1.Service) []ctrl.Request {
	owner := lookup.ControlledByListener(svc)
	if owner == "" {
		return nil
	}
	for k, v := range svc.Spec.Selector {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) && v != v1alpha1.PodSelectorLabelValue {
			return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: owner}}}
		}
	}
	return nil
}

func (r *takeoverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer metrics.ObserveReconcile(ControllerName, time.Now())
	l, svc, want, err := r.pending(ctx, req.NamespacedName)
	if err != nil || svc == nil {
		r.backoff.forget(req.NamespacedName)
		return ctrl.Result{}, err
	}
	if r.sweeps.swept(svc) && !cacheDecides(svc.Spec.Selector, want) {
		// Only a live list can tell: not before the current wait is over,
		// whatever events come meanwhile.
		if left := r.backoff.remaining(req.NamespacedName, time.Now()); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
	}
	pods, check, err := r.selectedPods(ctx, svc, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting := waitingPod(check, pods); waiting != nil {
		log.FromContext(ctx).V(1).Info("service keeps its foreign selector until its pods carry ours", "service", svc.Name, "pod", waiting.Name)
		delay := r.backoff.wait(req.NamespacedName)
		r.recorder.Eventf(l, svc, corev1.EventTypeWarning, EventTakeoverPending, "Adopt",
			"Service %s keeps selecting pods by another operator's label until every pod it selects matches %v; pod %s lacks %s (the operator adds only its own listener labels: add the others to the pod, e.g. spec.extraPodSelectorLabels the pods do not carry); looking again in %s",
			svc.Name, want, waiting.Name, strings.Join(lackingLabels(want, waiting.Labels), ", "), delay)
		return ctrl.Result{RequeueAfter: delay}, nil
	}
	r.backoff.forget(req.NamespacedName)
	return ctrl.Result{}, r.switchSelector(ctx, svc, want)
}

// pending returns the Listener, its Service and the selector the operator
// wants for it when that Service still selects by a foreign label (no
// Service: nothing to take over).
func (r *takeoverReconciler) pending(ctx context.Context, key types.NamespacedName) (*v1alpha1.Listener, *corev1.Service, map[string]string, error) {
	l := &v1alpha1.Listener{}
	if err := r.client.Get(ctx, key, l); err != nil || !l.DeletionTimestamp.IsZero() || l.Spec.ClassName == nil {
		return nil, nil, nil, client.IgnoreNotFound(err)
	}
	// Most Listeners have nothing to take over: found out from the cached
	// Service before their desired one is computed.
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)}, svc); err != nil {
		return nil, nil, nil, client.IgnoreNotFound(err)
	}
	if len(listenerOfForeignService(svc)) == 0 {
		r.sweeps.forget(svc.UID)
		return nil, nil, nil, nil
	}
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		return nil, nil, nil, client.IgnoreNotFound(err) // the Listener controller says why
	}
	want, _, err := service.Desired(l, class, "", service.Carried{}) // only its selector counts here
	if err != nil {
		return nil, nil, nil, nil // the Listener controller says why
	}
	sel, err := foreign.WantedSelector(want)
	if err != nil {
		return nil, nil, nil, err
	}
	if want.GetName() != svc.Name || !metav1.IsControlledBy(svc, l) || len(foreign.SelectorKeys(svc.Spec.Selector, sel)) == 0 {
		r.sweeps.forget(svc.UID)
		return nil, nil, nil, nil
	}
	return l, svc, sel, nil
}

// selectedPods are the pods the Service's foreign selector matches (or may:
// see cacheDecides), each with the labels it carries, and the selector they
// have to match before the switch. The first time, and whenever the cache
// cannot decide, they are listed from the API server and labelled
// (takeoverLabels); otherwise they come from the cache, which keeps only
// some of their labels (cachedSelector).
func (r *takeoverReconciler) selectedPods(ctx context.Context, svc *corev1.Service, want map[string]string) ([]corev1.Pod, map[string]string, error) {
	cached := cachedSelector(svc.Spec.Selector)
	if r.sweeps.swept(svc) && cacheDecides(svc.Spec.Selector, want) {
		var pods corev1.PodList
		if err := r.client.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(cached)); err != nil {
			return nil, nil, fmt.Errorf("list cached pods selected by service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		// A pod that got the other operator's label after the sweep.
		live, err := r.label(ctx, pods.Items, want)
		return live, cachedSelector(want), err
	}
	var pods corev1.PodList
	if err := r.live.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(cached)); err != nil {
		return nil, nil, fmt.Errorf("list pods selected by service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	live, err := r.label(ctx, pods.Items, want)
	if err != nil {
		return nil, nil, err
	}
	var selected []corev1.Pod
	for _, p := range live {
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)) {
			selected = append(selected, p)
		}
	}
	r.sweeps.record(svc)
	return selected, want, nil
}

// label gives each pod that can still be an endpoint the labels it lacks
// for the switch to want (takeoverLabels) and returns those pods, as
// labelled.
func (r *takeoverReconciler) label(ctx context.Context, pods []corev1.Pod, want map[string]string) ([]corev1.Pod, error) {
	var live []corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !podstate.Running(p) {
			continue
		}
		missing := takeoverLabels(want, p.Labels)
		if err := labelpatch.AddPodLabels(ctx, r.client, ControllerName, p, missing); err != nil {
			return nil, fmt.Errorf("label pod %s/%s for the takeover of its Service: %w", p.Namespace, p.Name, err)
		}
		if len(missing) > 0 && p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for k, v := range missing {
			p.Labels[k] = v
		}
		live = append(live, *p)
	}
	return live, nil
}

// cachedSelector is the part of a selector the cached pods' labels can
// match (caches.PodLabelKept). A foreign selector always has a part: the
// other operator's listener label.
func cachedSelector(sel map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range sel {
		if caches.PodLabelKept(k) {
			out[k] = v
		}
	}
	return out
}

// cacheDecides reports whether the cached pods tell whether every pod the
// foreign selector matches also matches want: when each label of want the
// cache drops is one the foreign selector selects by (so every pod it
// matches has it). Pods that match only the cached part of the foreign
// selector count too, which can only make the switch wait for them.
func cacheDecides(foreign, want map[string]string) bool {
	for k, v := range want {
		if !caches.PodLabelKept(k) && foreign[k] != v {
			return false
		}
	}
	return true
}

// switchSelector replaces the Service's selector with exactly want, guarded
// by the resourceVersion the decision was made on: a Service changed since
// sends an event that brings the Listener back.
func (r *takeoverReconciler) switchSelector(ctx context.Context, svc *corev1.Service, want map[string]string) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": svc.ResourceVersion},
		{"op": "replace", "path": "/spec/selector", "value": want},
	})
	if err != nil {
		return fmt.Errorf("build selector patch for service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	err = r.client.Patch(ctx, svc.DeepCopy(), client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Service", "patch", err) != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed since it was read: its event follows
		}
		return fmt.Errorf("switch selector of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	r.sweeps.forget(svc.UID)
	r.recorder.Eventf(svc, nil, corev1.EventTypeNormal, EventServiceAdopted, "Adopt",
		"Switched the selector of Service %s to %v: every pod it selected carries that label", svc.Name, want)
	return nil
}
