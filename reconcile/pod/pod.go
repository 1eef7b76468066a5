package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/labelpatch"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/options"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podready"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=patch
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=podlisteners,verbs=get;list;watch;create;update

// podReconciler labels pods for the Services of their Listeners (when the
// admission webhook could not) and keeps each pod's PodListeners.
type podReconciler struct {
	client client.Client
	// live reads a PodListeners whole; podListeners holds only its hash
	// (podlisteners.go).
	live         client.Reader
	podListeners *caches.PodListenersHashes
	recorder     events.EventRecorder
	evictions    evictor // addresschange.go
}

// ControllerName names the pod controller in metrics and logs.
const ControllerName = "podlisteners"

// Setup registers the pod controller and the relabel scan (relabel.go)
// with mgr (the indexes of lookup.AddIndexes registered).
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	if err := setupController(mgr, opts, recorder); err != nil {
		return err
	}
	relabel := &podRelabeler{live: mgr.GetAPIReader(), client: mgr.GetClient(), synced: mgr.GetCache().WaitForCacheSync, interval: opts.PodRelabelInterval}
	if err := mgr.Add(relabel); err != nil {
		return fmt.Errorf("add the pod relabel scan: %w", err)
	}
	return nil
}

func setupController(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	evictions, err := newEvictor(mgr.GetConfig())
	if err != nil {
		return err
	}
	podListeners, err := caches.NewPodListenersHashes(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	r := &podReconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), podListeners: podListeners, recorder: recorder, evictions: evictions}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return len(names.PodClaimNames(o.(*corev1.Pod))) > 0
		}))).
		// A PodListeners changed or deleted brings its pod back; only its
		// hash is held (podlisteners.go), and the workers start once
		// every PodListeners is known.
		WatchesRawSource(podListeners).
		// A pod's claim may be created after the pod (generic ephemeral
		// volumes) or change its Listener.
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return podsOfClaims(ctx, c, o.GetNamespace(), o.GetName())
		})).
		// Addresses come from the Listener's status.
		Watches(&v1alpha1.Listener{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			claims, err := lookup.ClaimsOfListener(ctx, c, o.GetNamespace(), o.GetName())
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "list claims of listener", "listener", o.GetName())
				return nil
			}
			var reqs []ctrl.Request
			for _, claim := range claims {
				reqs = append(reqs, podsOfClaims(ctx, c, claim.Namespace, claim.Name)...)
			}
			return reqs
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.Wrapped(ControllerName, r))
}

func podsOfClaims(ctx context.Context, c client.Reader, namespace, claim string) []ctrl.Request {
	pods, err := caches.PodsOfClaim(ctx, c, namespace, claim)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "look up the pods of a claim", "claim", claim)
		return nil
	}
	reqs := make([]ctrl.Request, len(pods))
	for i := range pods {
		reqs[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&pods[i])}
	}
	return reqs
}

// podVolumeListener is a listener volume of a pod and the Listener it uses.
// statefulSetPod is the pod that Listener's Service selects by name (""
// when it selects by the per-Listener label). claim is what the volume
// records about its Listener (addresses.Publishable).
type podVolumeListener struct {
	volume, listener, statefulSetPod string
	claim                            addresses.Volume
}

func (r *podReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer metrics.ObserveReconcile(ControllerName, time.Now())
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pod.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// A claim that does not exist yet: its own event brings the pod back.
	vols, missing, err := podLabelsLacking(ctx, r.client, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := labelpatch.AddPodLabels(ctx, r.client, ControllerName, pod, missing); err != nil {
		return ctrl.Result{}, err
	}
	if len(vols) == 0 {
		return ctrl.Result{}, nil
	}
	if pod.Spec.NodeName == "" || podstate.Finished(pod) {
		return ctrl.Result{}, nil
	}
	spec, waiting, judged, err := r.podListenersSpec(ctx, pod, vols)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, recorded, err := r.writePodListeners(ctx, pod, spec, waiting, vols)
	if err != nil && gated(pod) {
		return res, errors.Join(err, r.writeGateCondition(ctx, pod, podready.Refused(judged, refusal(err)))) // gate.go
	}
	if err != nil || recorded == nil || !gated(pod) {
		return res, err
	}
	gres, err := r.gate(ctx, pod, judged, *recorded) // gate.go
	if res.RequeueAfter == 0 || gres.RequeueAfter > 0 && gres.RequeueAfter < res.RequeueAfter {
		res.RequeueAfter = gres.RequeueAfter
	}
	return res, err
}

// podLabelsLacking lists the listener volumes of a pod and the labels it
// lacks (claims.PodLabels): none when it mounts no listener volume and no
// claim that may become one.
func podLabelsLacking(ctx context.Context, c client.Reader, pod *corev1.Pod) ([]podVolumeListener, map[string]string, error) {
	vols, pending, err := listenerVolumes(ctx, c, pod)
	if err != nil || len(vols) == 0 && !pending {
		return vols, nil, err
	}
	return vols, missingLabels(pod, vols), nil
}

// listenerVolumes lists the listener volumes of a pod and their Listeners,
// reading the claims from c. pending says that a claim of the pod does not
// exist yet (it may become a listener claim), or is a listener claim that
// uses no Listener (claims.Of; it may be given one): the pod is a listener
// pod all the same.
func listenerVolumes(ctx context.Context, c client.Reader, pod *corev1.Pod) (vols []podVolumeListener, pending bool, err error) {
	for _, vc := range names.PodVolumeClaims(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: vc.Claim}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				pending = true
				continue
			}
			return nil, false, fmt.Errorf("get claim %s/%s of pod %s: %w", pod.Namespace, vc.Claim, pod.Name, err)
		}
		use, ok := claims.OfClaim(pvc)
		if !ok {
			continue
		}
		// A bound volume keeps the Listener it was provisioned for,
		// whatever the claim's annotations say since.
		pv, err := lookup.BoundVolume(ctx, c, pvc)
		if err != nil {
			return nil, false, err
		}
		bound := claims.Bound(pvc, use, pv)
		if bound.Listener == "" {
			pending = true
			continue
		}
		vol := addresses.Volume{PerClaim: bound.Own, Claim: client.ObjectKeyFromObject(pvc), ClaimUID: pvc.UID, Name: pvc.Spec.VolumeName}
		if pv != nil {
			vol.Name = pv.Name
		}
		vols = append(vols, podVolumeListener{volume: vc.Volume, listener: bound.Listener, statefulSetPod: statefulSetPod(ctx, c, pvc, bound.Listener), claim: vol})
	}
	return vols, pending, nil
}

// statefulSetPod is the pod that the Listener named listener, of claim
// pvc, selects by name (claims.SelectedPod), reading the Listener from c.
func statefulSetPod(ctx context.Context, c client.Reader, pvc *corev1.PersistentVolumeClaim, listener string) string {
	return claims.SelectedPod(pvc.Name, pvc.Annotations, func() (map[string]string, bool) {
		l := &v1alpha1.Listener{}
		err := c.Get(ctx, types.NamespacedName{Namespace: pvc.Namespace, Name: listener}, l)
		return l.Annotations, err == nil
	})
}

// missingLabels are the labels a pod with listener volumes lacks
// (claims.PodLabels).
func missingLabels(pod *corev1.Pod, vols []podVolumeListener) map[string]string {
	listeners := make([]claims.PodListener, len(vols))
	for i, v := range vols {
		listeners[i] = claims.PodListener{Listener: v.listener, StatefulSetPod: v.statefulSetPod}
	}
	return claims.Missing(claims.PodLabels(pod.Name, pod.Labels, listeners), pod.Labels)
}

// podListenersSpec lists what the pod is told per listener volume, by the
// rule its address tree follows too (addresses.ForPod), and the volumes
// whose pod must wait (their Listener is missing, may not be published
// yet, or has no addresses yet): those keep the entry last written
// (writePodListeners), as the node plugin keeps the tree it last wrote,
// until the Listener's status (or the node) brings the pod back. judged
// is what the readiness gate reads of each volume (podready.Volume, less
// what the PodListeners records).
func (r *podReconciler) podListenersSpec(ctx context.Context, pod *corev1.Pod, vols []podVolumeListener) (spec v1alpha1.PodListenersSpec, waiting []string, judged []podready.Volume, err error) {
	spec = v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{}}
	for _, v := range vols {
		judged = append(judged, podready.Volume{Name: v.volume})
		pr := &judged[len(judged)-1]
		l := &v1alpha1.Listener{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: v.listener}, l); err != nil {
			if apierrors.IsNotFound(err) {
				waiting = append(waiting, v.volume)
				continue
			}
			return spec, nil, nil, fmt.Errorf("get listener %s/%s of pod %s: %w", pod.Namespace, v.listener, pod.Name, err)
		}
		pv := addresses.PodVolume{Pod: pod, Volume: v.claim, Listener: l}
		if pv.Class, err = r.classOf(ctx, l); err != nil {
			return spec, nil, nil, err
		}
		pr.Listener, pr.Class = l, pv.Class
		if addresses.PodServiceType(l, pv.Class) == v1alpha1.ServiceTypeNodePort && pod.Spec.NodeName != "" {
			pv.Node = &corev1.Node{}
			if err := r.client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, pv.Node); apierrors.IsNotFound(err) {
				pv.Node = nil
			} else if err != nil {
				return spec, nil, nil, fmt.Errorf("get node %s of pod %s/%s: %w", pod.Spec.NodeName, pod.Namespace, pod.Name, err)
			}
		}
		pl, err := addresses.ForPod(pv)
		var w *addresses.Wait
		switch {
		case errors.As(err, &w):
			waiting = append(waiting, v.volume)
			pr.Pending = w.Reason
			continue
		case err != nil:
			return spec, nil, nil, err
		}
		spec.Listeners[v.volume] = pl
		pr.Now = &pl
	}
	return spec, waiting, judged, nil
}

// classOf is the Listener's class, nil when it names none or it is gone.
func (r *podReconciler) classOf(ctx context.Context, l *v1alpha1.Listener) (*v1alpha1.ListenerClass, error) {
	if l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		return nil, nil
	}
	class := &v1alpha1.ListenerClass{}
	err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get listener class %s: %w", *l.Spec.ClassName, err)
	}
	return class, nil
}
