package pod

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Event reasons of the address-change signal (on the pod).
const (
	// EventAddressChanged: what the pod would read from a listener volume
	// now differs from what it was given when it started.
	EventAddressChanged = "ListenerAddressChanged"
	// EventAddressChangeEvicted: the pod was evicted so that it restarts
	// with the new addresses (its class's addressChange.restartPods).
	EventAddressChangeEvicted = "ListenerAddressChangeEvicted"
	// EventAddressChangeEvictionRefused: the eviction was refused (a
	// PodDisruptionBudget, usually); the operator tries again.
	EventAddressChangeEvictionRefused = "ListenerAddressChangeEvictionRefused"
)

// evictionRetry is how soon an eviction a PodDisruptionBudget refused is
// tried again.
const evictionRetry = 30 * time.Second

// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// recordAddressChanges returns cur (what each listener volume of a pod
// would read now) with AddressesAtStart set for the volumes whose
// addresses differ from those the pod was given when it started, as old
// (the PodListeners written so far) remembers them: the addresses first
// published for a volume, kept in AddressesAtStart once they differ.
// changed lists the volumes whose addresses moved in this step away from
// those at start, in name order.
func recordAddressChanges(old, cur v1alpha1.PodListenersSpec) (v1alpha1.PodListenersSpec, []string) {
	var changed []string
	out := v1alpha1.PodListenersSpec{Listeners: make(map[string]v1alpha1.PodListener, len(cur.Listeners))}
	for vol, now := range cur.Listeners {
		now.AddressesAtStart = nil
		before, ok := old.Listeners[vol]
		start := before.AddressesAtStart
		if len(start) == 0 {
			start = before.IngressAddresses
		}
		if ok && len(start) > 0 && !equality.Semantic.DeepEqual(start, now.IngressAddresses) {
			now.AddressesAtStart = start
			if !equality.Semantic.DeepEqual(before.IngressAddresses, now.IngressAddresses) {
				changed = append(changed, vol)
			}
		}
		out.Listeners[vol] = now
	}
	if cur.Listeners == nil {
		out.Listeners = nil
	}
	slices.Sort(changed)
	return out, changed
}

// describeAddresses renders addresses for an event: "host:port,…".
func describeAddresses(addrs []v1alpha1.ListenerIngress) string {
	if len(addrs) == 0 {
		return "none"
	}
	var parts []string
	for _, a := range addrs {
		var ports []string
		for name, p := range a.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", name, p))
		}
		slices.Sort(ports)
		parts = append(parts, a.Address+" ("+strings.Join(ports, " ")+")")
	}
	return strings.Join(parts, ", ")
}

// signalAddressChanges tells the pod (by an event) which volumes' addresses
// changed, and evicts it when the class of a volume whose addresses differ
// from those at start asks for restarts.
func (r *podReconciler) signalAddressChanges(ctx context.Context, pod *corev1.Pod, pl *v1alpha1.PodListeners, vols []podVolumeListener, changed []string) (ctrl.Result, error) {
	for _, vol := range changed {
		e := pl.Spec.Listeners[vol]
		r.recorder.Eventf(pod, pl, corev1.EventTypeWarning, EventAddressChanged, "AddressChange",
			"Listener volume %s now holds %s; the pod started with %s and advertises those until it restarts", vol, describeAddresses(e.IngressAddresses), describeAddresses(e.AddressesAtStart))
	}
	restart := false
	for _, v := range vols {
		if len(pl.Spec.Listeners[v.volume].AddressesAtStart) == 0 {
			continue
		}
		ok, err := r.restartsPods(ctx, pod.Namespace, v.listener)
		if err != nil {
			return ctrl.Result{}, err
		}
		restart = restart || ok
	}
	if !restart {
		return ctrl.Result{}, nil
	}
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := r.evictions.evict(ctx, eviction)
	switch {
	case metrics.CountWrite(ControllerName, "Pod", "evict", err) == nil:
		r.recorder.Eventf(pod, pl, corev1.EventTypeNormal, EventAddressChangeEvicted, "Evict",
			"Evicted so that the pod restarts with its new listener addresses (its ListenerClass sets addressChange.restartPods)")
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return ctrl.Result{}, nil // gone, or replaced by a pod of the same name
	case apierrors.IsTooManyRequests(err):
		r.recorder.Eventf(pod, pl, corev1.EventTypeWarning, EventAddressChangeEvictionRefused, "Evict",
			"Eviction to restart with the new listener addresses was refused, retrying in %s: %v", evictionRetry, err)
		return ctrl.Result{RequeueAfter: evictionRetry}, nil
	default:
		return ctrl.Result{}, fmt.Errorf("evict pod %s/%s to restart with new listener addresses: %w", pod.Namespace, pod.Name, err)
	}
}

// evictor creates evictions through the API server without retrying a
// refusal: a PodDisruptionBudget's 429 carries Retry-After, which client-go
// would otherwise wait out (up to ten times) inside one reconcile.
type evictor struct {
	rest rest.Interface
}

func newEvictor(cfg *rest.Config) (evictor, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return evictor{}, fmt.Errorf("create clientset for evictions: %w", err)
	}
	return evictor{rest: cs.CoreV1().RESTClient()}, nil
}

func (e evictor) evict(ctx context.Context, eviction *policyv1.Eviction) error {
	return e.rest.Post().Namespace(eviction.Namespace).Resource("pods").Name(eviction.Name).SubResource("eviction").
		MaxRetries(0).Body(eviction).Do(ctx).Error()
}

// restartsPods reports whether the class of the named Listener asks for
// pods to be restarted when their addresses change.
func (r *podReconciler) restartsPods(ctx context.Context, namespace, listener string) (bool, error) {
	l := &v1alpha1.Listener{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: listener}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get listener %s/%s: %w", namespace, listener, err)
	}
	if l.Spec.ClassName == nil {
		return false, nil
	}
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get listener class %s: %w", *l.Spec.ClassName, err)
	}
	return class.Spec.AddressChange != nil && class.Spec.AddressChange.RestartPods != nil && *class.Spec.AddressChange.RestartPods, nil
}
