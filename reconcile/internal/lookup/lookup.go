// Package lookup holds the cache indexes of the leader's controllers and
// the reads through them that several controllers make: a Listener's
// Services and claims, the Listeners of a class or a Service, a claim's
// Listener and bound volume. Every lookup goes through an index or a read
// by name, never through a list of everything.
package lookup

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// Cache indexes: every lookup a reconcile or a watch mapping makes goes
// through one of these, never through a list of everything.
const (
	// IndexListenerClass: Listeners by spec.className.
	IndexListenerClass = "spec.className"
	// IndexListenerServiceName: Listeners by status.serviceName, the
	// Service they publish, and by the name their Service gets
	// (names.ServiceName), which a Listener not yet published waits for.
	IndexListenerServiceName = "status.serviceName"
	// IndexServiceOwner: Services by the name of the Listener that controls them.
	IndexServiceOwner = "listener.controller"
	// IndexServiceNodePortBlock: the Listeners' Services by the blocks of
	// NodePortBlock node ports their node ports are in (NodePortBlocks),
	// across namespaces and classes: a class's range is held by every such
	// Service with a port in it, a Listener's that moved to another class
	// too (the Listener controller's ranges). By block, not by port: a
	// range of 4,096 ports is 32 lookups, not 4,096 (BenchmarkRangeAsk,
	// 2,000 Services in such a range: 9.5 ms a write by block, 33 ms by
	// port).
	IndexServiceNodePortBlock = "service.nodePortBlock"
	// IndexServiceSharingKey: Services by the sharing key of their load
	// balancer (MetalLB's allow-shared-ip annotation, which the operator
	// alone sets on its Services; the Listener controller's shared load
	// balancers), looked up within one namespace.
	IndexServiceSharingKey = "service.sharingKey"
	// IndexEventRegarding: events by the UID of the object they are about
	// (the reconcilers hold only Warnings about Services: the Listener
	// controller's load-balancer warnings).
	IndexEventRegarding = "event.regarding.uid"
	// IndexServiceHostname: Services by the DNS names of their external-dns
	// hostname annotation, across namespaces (the Listener controller's hostname conflicts).
	IndexServiceHostname = "service.hostname"
	// IndexListenerPodLabel: Listeners by their pod selector label
	// (names.PodSelectorLabel, without its prefix), only where it is
	// shortened (not the Listener's own name), which few names are.
	IndexListenerPodLabel = "listener.podSelectorLabel"
	// IndexListenerSelectedStatefulSet: Listeners by the StatefulSet whose
	// pod they select by name (their statefulset-pod annotation): a
	// StatefulSet of that name made or deleted changes their verdict.
	IndexListenerSelectedStatefulSet = "listener.selectedStatefulSet"
	// IndexPodNode: pods by the node they are bound to.
	IndexPodNode = "pod.node"
	// IndexClaimListener: PersistentVolumeClaims by the Listener they use.
	IndexClaimListener = "claim.listener"
	// IndexPVNode: PersistentVolumes by the nodes they are pinned to
	// (addresses.PinnedNodes): the Listener and pinned-node-loss
	// controllers both look volumes up by node.
	IndexPVNode = caches.IndexVolumeNode
	// IndexPodClaim: pods by the claims their volumes name
	// (caches.PodsOfClaim).
	IndexPodClaim = caches.IndexPodClaim
	// IndexClaimOwnClass: listener claims that ask for a Listener of their
	// own, by its class (the pinned-node-loss controller's class events).
	IndexClaimOwnClass = "nodeloss.claim.class"
	// IndexListenerServiceRefused: the Listeners whose Ready says the API
	// server refused their Service (ServiceRefused), under
	// flagged, looked up within one namespace: a ResourceQuota
	// of the namespace changed wakes them (ListenersRefusedIn).
	IndexListenerServiceRefused = "listener.serviceRefused"
	// IndexListenerWaitingForPorts: the Listeners whose Ready says their
	// class's range has no ports for them (WaitingForPortsReasons), under
	// flagged, looked up cluster-wide (a node-port range spans
	// namespaces): what gives ports up wakes them (ListenersWaitingForPorts).
	IndexListenerWaitingForPorts = "listener.waitingForPorts"
)

// flagged is the one value of the indexes that only mark a Listener
// (IndexListenerServiceRefused, IndexListenerWaitingForPorts).
const flagged = "true"

// WaitingForPortsReasons are the Ready reasons of a Listener that waits
// for ports of its class's range: a node-port range, or the namespace's
// share of it, full; a sharing range without room, or a port of it taken.
var WaitingForPortsReasons = []string{
	v1alpha1.ReasonNodePortRangeExhausted, v1alpha1.ReasonNodePortShareExceeded,
	v1alpha1.ReasonSharedPortsExhausted, v1alpha1.ReasonSharedPortTaken,
}

// notReadyFor says whether o, a Listener, is not Ready for one of reasons.
func notReadyFor(o client.Object, reasons ...string) bool {
	c := meta.FindStatusCondition(o.(*v1alpha1.Listener).Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status != metav1.ConditionTrue && slices.Contains(reasons, c.Reason)
}

// AddIndexes registers every index of Indexes with indexer, once: the
// registry in reconcile does, before any controller is set up.
func AddIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return caches.AddIndexes(ctx, indexer, Indexes()...)
}

// Indexes are the cache indexes of the leader's controllers, every one
// that a lookup or a watch mapping lists by; the fake clients of the tests
// are built with the same (reconciletest).
func Indexes() []caches.Index {
	return []caches.Index{
		{Object: &corev1.Pod{}, Field: IndexPodClaim, Values: caches.PodNamedClaims},
		{Object: &corev1.PersistentVolume{}, Field: IndexPVNode, Values: func(o client.Object) []string {
			return addresses.PinnedNodes(o.(*corev1.PersistentVolume))
		}},
		{Object: &corev1.PersistentVolumeClaim{}, Field: IndexClaimOwnClass, Values: func(o client.Object) []string {
			if use, ok := claims.OfClaim(o.(*corev1.PersistentVolumeClaim)); ok && use.Own {
				return []string{use.Class}
			}
			return nil
		}},
		{Object: &v1alpha1.Listener{}, Field: IndexListenerClass, Values: func(o client.Object) []string {
			if c := o.(*v1alpha1.Listener).Spec.ClassName; c != nil {
				return []string{*c}
			}
			return nil
		}},
		// Only the names other than the Listener's own: a Listener is found
		// by its own name with a read (ListenersOfService).
		{Object: &v1alpha1.Listener{}, Field: IndexListenerServiceName, Values: func(o client.Object) []string {
			return otherThan(o.GetName(), ListenerServiceNames(o.(*v1alpha1.Listener)))
		}},
		// Only shortened labels (the Listener controller's name collisions).
		{Object: &v1alpha1.Listener{}, Field: IndexListenerPodLabel, Values: func(o client.Object) []string {
			return shortenedPodLabel(o.GetName())
		}},
		// Only the few Listeners whose Service is refused.
		{Object: &v1alpha1.Listener{}, Field: IndexListenerServiceRefused, Values: func(o client.Object) []string {
			if notReadyFor(o, v1alpha1.ReasonServiceRefused) {
				return []string{flagged}
			}
			return nil
		}},
		// Only the few Listeners waiting for ports of a range.
		{Object: &v1alpha1.Listener{}, Field: IndexListenerWaitingForPorts, Values: func(o client.Object) []string {
			if notReadyFor(o, WaitingForPortsReasons...) {
				return []string{flagged}
			}
			return nil
		}},
		{Object: &v1alpha1.Listener{}, Field: IndexListenerSelectedStatefulSet, Values: func(o client.Object) []string {
			pod, ok := o.GetAnnotations()[v1alpha1.AnnotationStatefulSetPod]
			if sts := claims.StatefulSetOfPod(pod); ok && sts != "" {
				return []string{sts}
			}
			return nil
		}},
		// Only Services under another name than their Listener's Service
		// name (ServicesOfListener reads that one by name).
		{Object: &corev1.Service{}, Field: IndexServiceOwner, Values: func(o client.Object) []string {
			if owner := ControlledByListener(o); owner != "" && names.ServiceName(owner) != o.GetName() {
				return []string{owner}
			}
			return nil
		}},
		{Object: &corev1.Service{}, Field: IndexServiceHostname, Values: func(o client.Object) []string {
			return HostnamesOf(o)
		}},
		{Object: &corev1.Service{}, Field: IndexServiceNodePortBlock, Values: func(o client.Object) []string {
			if ControlledByListener(o) == "" {
				return nil
			}
			return NodePortBlocks(o.(*corev1.Service))
		}},
		{Object: &corev1.Service{}, Field: IndexServiceSharingKey, Values: func(o client.Object) []string {
			if key := o.GetAnnotations()[v1alpha1.AnnotationMetalLBSharedIP]; key != "" {
				return []string{key}
			}
			return nil
		}},
		{Object: &eventsv1.Event{}, Field: IndexEventRegarding, Values: func(o client.Object) []string {
			if uid := o.(*eventsv1.Event).Regarding.UID; uid != "" {
				return []string{string(uid)}
			}
			return nil
		}},
		{Object: &corev1.Pod{}, Field: IndexPodNode, Values: func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}},
		// Only claims of a Listener of another name: a per-claim Listener's
		// claim has its name (ClaimsOfListener reads it by name).
		{Object: &corev1.PersistentVolumeClaim{}, Field: IndexClaimListener, Values: func(o client.Object) []string {
			if name, ok := ClaimListener(o.(*corev1.PersistentVolumeClaim)); ok && name != o.GetName() {
				return []string{name}
			}
			return nil
		}},
	}
}

// otherThan is vals without own.
func otherThan(own string, vals []string) []string {
	var out []string
	for _, v := range vals {
		if v != own {
			out = append(out, v)
		}
	}
	return out
}

// ListenersOfService maps a Service (or the name of one) to the Listeners
// whose Service it is or would be: the Listener of the same name, read by
// name, and those the index files under another name.
func ListenersOfService(ctx context.Context, c client.Reader, namespace, svcName string) []ctrl.Request {
	reqs := RequestsFor(ctx, c, &v1alpha1.ListenerList{}, client.InNamespace(namespace), client.MatchingFields{IndexListenerServiceName: svcName})
	l := &v1alpha1.Listener{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: svcName}, l); {
	case err == nil:
		if slices.Contains(ListenerServiceNames(l), svcName) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(l)})
		}
	case !apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Error(err, "get the listener of a service", "service", svcName)
	}
	return reqs
}

// ServicesOfListener are the Services l controls: the one under its
// Service name, read by name, and those under other names (stale), through
// the index.
func ServicesOfListener(ctx context.Context, c client.Reader, l *v1alpha1.Listener) ([]corev1.Service, error) {
	var owned corev1.ServiceList
	if err := c.List(ctx, &owned, client.InNamespace(l.Namespace), client.MatchingFields{IndexServiceOwner: l.Name}); err != nil {
		return nil, fmt.Errorf("list services of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	svc := &corev1.Service{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)}, svc); {
	case err == nil:
		if ControlledByListener(svc) == l.Name {
			owned.Items = append(owned.Items, *svc)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get service of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return owned.Items, nil
}

// ClaimsOfListener are the claims using the Listener namespace/name: the
// claim of the same name (a per-claim Listener's), read by name, and those
// of shared Listeners, through the index.
func ClaimsOfListener(ctx context.Context, c client.Reader, namespace, name string) ([]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexClaimListener: name}); err != nil {
		return nil, fmt.Errorf("list claims of listener %s/%s: %w", namespace, name, err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pvc); {
	case err == nil:
		if l, ok := ClaimListener(pvc); ok && l == name {
			list.Items = append(list.Items, *pvc)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get claim %s/%s: %w", namespace, name, err)
	}
	return list.Items, nil
}

// ListenerServiceNames are the Service names a Listener is found by: the
// one its status publishes and the one it would get (they differ only when
// the naming changed, or before the first status).
func ListenerServiceNames(l *v1alpha1.Listener) []string {
	own := names.ServiceName(l.Name)
	if s := l.Status.ServiceName; s != "" && s != own {
		return []string{s, own}
	}
	return []string{own}
}

// ClaimListener is the Listener a listener claim uses (claims.OfClaim):
// false when it is not a listener claim or uses none.
func ClaimListener(pvc *corev1.PersistentVolumeClaim) (string, bool) {
	use, ok := claims.OfClaim(pvc)
	return use.Listener, ok && use.Listener != ""
}

// ListenersOfClass maps a class to the requests of its Listeners.
func ListenersOfClass(ctx context.Context, c client.Reader, class string) []ctrl.Request {
	return RequestsFor(ctx, c, &v1alpha1.ListenerList{}, client.MatchingFields{IndexListenerClass: class})
}

// RequestsFor lists objects through an index (from the cache) and turns
// them into reconcile requests. A failed list is logged and maps to nothing:
// a map function has no way to return an error.
func RequestsFor(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) []ctrl.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list objects to reconcile", "kind", fmt.Sprintf("%T", list), "options", opts)
		return nil
	}
	var reqs []ctrl.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return reqs
}

// ListenersRefusedIn are the Listeners of namespace whose Ready says the
// API server refused their Service (through IndexListenerServiceRefused):
// what a ResourceQuota of the namespace changing may let through.
func ListenersRefusedIn(ctx context.Context, c client.Reader, namespace string) []ctrl.Request {
	return RequestsFor(ctx, c, &v1alpha1.ListenerList{}, client.InNamespace(namespace), client.MatchingFields{IndexListenerServiceRefused: flagged})
}

// ListenersWaitingForPorts are the Listeners whose Ready says their
// class's range has no ports for them (through
// IndexListenerWaitingForPorts): what a Service or Listener giving ports
// up may make room for.
func ListenersWaitingForPorts(ctx context.Context, c client.Reader) []ctrl.Request {
	return RequestsFor(ctx, c, &v1alpha1.ListenerList{}, client.MatchingFields{IndexListenerWaitingForPorts: flagged})
}

// ControlledByListener is the name of the Listener controlling o, or "".
func ControlledByListener(o metav1.Object) string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Listener" && ref.APIVersion == v1alpha1.GroupVersion.String() {
		return ref.Name
	}
	return ""
}

// NodePortBlock is how many node ports one value of
// IndexServiceNodePortBlock covers.
const NodePortBlock = 128

// NodePortBlockKey is the IndexServiceNodePortBlock value of node port p.
func NodePortBlockKey(p int32) string {
	return strconv.Itoa(int(p) / NodePortBlock)
}

// NodePortBlocks are the IndexServiceNodePortBlock values of svc's node
// ports, each once.
func NodePortBlocks(svc *corev1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		if k := NodePortBlockKey(p.NodePort); p.NodePort != 0 && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// HostnamesOf are the DNS names o's external-dns hostname annotation
// carries (a comma-separated list, as external-dns reads it).
func HostnamesOf(o client.Object) []string {
	var out []string
	for _, h := range strings.Split(o.GetAnnotations()[v1alpha1.AnnotationExternalDNSHostname], ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// PodLabelName is a Listener's pod selector label without its prefix:
// its name, or the shortened form of it.
func PodLabelName(name string) string {
	return strings.TrimPrefix(names.PodSelectorLabel(name), v1alpha1.PodSelectorLabelPrefix)
}

// shortenedPodLabel is the index value of a Listener named name: its
// PodLabelName, when that is not its name.
func shortenedPodLabel(name string) []string {
	if l := PodLabelName(name); l != name {
		return []string{l}
	}
	return nil
}

// BoundVolume is the volume of this driver bound to the claim itself (not
// to an earlier claim of the same name), or nil.
func BoundVolume(ctx context.Context, c client.Reader, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	if pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get volume %s of claim %s/%s: %w", pvc.Spec.VolumeName, pvc.Namespace, pvc.Name, err)
	}
	if !claims.IsVolumeOf(pvc, pv) {
		return nil, nil
	}
	return pv, nil
}
