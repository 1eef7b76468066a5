package caches

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A listener pod is held by the reconcilers' cache as a heldPod: what
// TrimPod keeps of it, in a struct of its own. A corev1.Pod is 1,192 bytes
// before anything it points to, a Container 408 and a Volume 256, for the
// dozen fields of them the reconcilers read; a heldPod is the metadata and
// those fields. Everything that reads the cache still gets a *corev1.Pod:
// a heldPod's DeepCopyObject makes one (controller-runtime's cache reader
// deep-copies what it hands out), and heldPods wraps the cache's pod
// informer so that event handlers and indexers see the same.

// heldPod is a pod as the reconcilers' cache holds it (CompactPod).
type heldPod struct {
	// The metadata TrimPod keeps: the operator's annotations, the labels
	// podLabelsRead keeps, the controller while Pending.
	metav1.ObjectMeta
	nodeName string
	phase    corev1.PodPhase
	// ready is the status of the Ready condition; "" without one.
	ready   corev1.ConditionStatus
	volumes []heldVolume
	// container and ports: the ports of every container, in order, as
	// TrimPod holds them in one container named after the first.
	container string
	ports     []corev1.ContainerPort
	// affinity is the required node affinity, kept while Pending.
	affinity *corev1.NodeSelector
}

// heldVolume is a volume backed by a claim: by name (claim), or generic
// ephemeral (claim nil).
type heldVolume struct {
	name  string
	claim *corev1.PersistentVolumeClaimVolumeSource
}

var _ client.Object = (*heldPod)(nil)

// GetObjectKind implements runtime.Object: a held pod has no type meta of
// its own (the cache reader sets the kind on what it hands out).
func (*heldPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: it returns the *corev1.Pod the
// pod is held as (TrimPod's), sharing no memory with it.
func (h *heldPod) DeepCopyObject() runtime.Object {
	p := &corev1.Pod{}
	h.fill(p, true)
	return p
}

// CompactPod is the reconcilers' transform of a Pod: it holds what TrimPod
// keeps as a heldPod, which reads back as TrimPod's pod. Anything else
// passes unchanged.
func CompactPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return holdPod(pod), nil
}

// holdPod is what the caches keep of a pod (TrimPod says what and why),
// with its repeated strings canonical. It shares memory with pod.
func holdPod(pod *corev1.Pod) *heldPod {
	h := &heldPod{ObjectMeta: pod.ObjectMeta}
	h.ManagedFields = nil
	h.OwnerReferences = nil
	// Pinned-node loss reads a pod's controller and node affinity only
	// while the pod is Pending (it deletes such a pod, if a controller
	// recreates it, when its pinned node is gone); a pod bound to a node
	// is never unbound.
	pending := pod.Spec.NodeName == ""
	if ref := metav1.GetControllerOf(pod); ref != nil && pending {
		h.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	h.Finalizers = nil
	h.Annotations = operatorEntries(pod.Annotations)
	h.Labels = podLabelsRead(pod.Labels)
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			h.volumes = append(h.volumes, heldVolume{name: v.Name, claim: v.PersistentVolumeClaim})
		case v.Ephemeral != nil:
			// The claim is "<pod>-<volume>" and the reconcilers read it,
			// not its template (which repeats the claim's annotations
			// and spec in every pod).
			h.volumes = append(h.volumes, heldVolume{name: v.Name})
		}
	}
	if len(h.volumes) > 0 {
		// A per-claim Listener takes its ports from its pods' containers;
		// a pod without claims is never asked for them. Read only as one
		// list in container order (api/ports).
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				if h.container == "" {
					h.container = c.Name
				}
				h.ports = append(h.ports, c.Ports...)
			}
		}
	}
	h.nodeName = pod.Spec.NodeName
	if a := pod.Spec.Affinity; pending && a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		// What pins a pod to a node; pod (anti-)affinity can be large.
		h.affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	h.phase = pod.Status.Phase
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			// A constant: the condition costs no string of its own.
			h.ready = conditionStatus(c.Status)
			break
		}
	}
	h.intern()
	return h
}

// fill writes the pod h holds into p, over whatever p held; with deep, p
// shares no memory with h.
func (h *heldPod) fill(p *corev1.Pod, deep bool) {
	*p = corev1.Pod{ObjectMeta: h.ObjectMeta}
	if deep {
		h.ObjectMeta.DeepCopyInto(&p.ObjectMeta)
	}
	if len(h.volumes) > 0 {
		p.Spec.Volumes = make([]corev1.Volume, len(h.volumes))
		for i, v := range h.volumes {
			p.Spec.Volumes[i].Name = v.name
			switch {
			case v.claim == nil:
				p.Spec.Volumes[i].Ephemeral = &corev1.EphemeralVolumeSource{}
			case deep:
				p.Spec.Volumes[i].PersistentVolumeClaim = v.claim.DeepCopy()
			default:
				p.Spec.Volumes[i].PersistentVolumeClaim = v.claim
			}
		}
	}
	if len(h.ports) > 0 {
		ports := h.ports
		if deep {
			ports = slices.Clone(ports)
		}
		p.Spec.Containers = []corev1.Container{{Name: h.container, Ports: ports}}
	}
	p.Spec.NodeName = h.nodeName
	if h.affinity != nil {
		required := h.affinity
		if deep {
			required = required.DeepCopy()
		}
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	}
	p.Status.Phase = h.phase
	if h.ready != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: h.ready}}
	}
}

// intern makes the repeated strings of a held pod canonical: its metadata,
// node, phase, volume, container and port names, protocols and node
// affinity.
func (h *heldPod) intern() {
	internMeta(&h.ObjectMeta)
	internString(&h.nodeName)
	internString(&h.phase)
	for i := range h.volumes {
		internString(&h.volumes[i].name)
	}
	internString(&h.container)
	for i := range h.ports {
		internString(&h.ports[i].Name)
		internString(&h.ports[i].Protocol)
	}
	if h.affinity != nil {
		internNodeSelector(h.affinity)
	}
}

// asPod is obj as event handlers and index functions read it: a heldPod
// (or a tombstone of one) as its *corev1.Pod, sharing the held pod's
// memory as the stored object itself did before pods were held this way
// (they only read it; reads through the cache get a deep copy); anything
// else unchanged.
func asPod(obj any) any {
	switch o := obj.(type) {
	case *heldPod:
		p := &corev1.Pod{}
		o.fill(p, false)
		return p
	case toolscache.DeletedFinalStateUnknown:
		o.Obj = asPod(o.Obj)
		return o
	}
	return obj
}

// heldPods is a cache whose pods are held as heldPods (the Reconcilers
// policy): its pod informer hands event handlers and indexers
// *corev1.Pods, and its field indexes of pods extract from them. Reads
// need nothing: the cache reader deep-copies, which makes the pod, unless
// asked not to, which heldPods refuses for pods (it would hand out a
// heldPod).
type heldPods struct {
	cache.Cache
}

func isPod(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.PodList:
		return true
	}
	return false
}

// Get implements client.Reader; pods are always deep-copied.
func (c heldPods) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if isPod(obj) {
		opts = withoutUnsafeCopy(opts)
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// List implements client.Reader; pods are always deep-copied.
func (c heldPods) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if isPod(list) {
		opts = withoutUnsafeCopy(opts)
	}
	return c.Cache.List(ctx, list, opts...)
}

// withoutUnsafeCopy drops client.UnsafeDisableDeepCopyOption from opts.
func withoutUnsafeCopy[O any](opts []O) []O {
	return slices.DeleteFunc(slices.Clone(opts), func(o O) bool {
		_, unsafe := any(o).(client.UnsafeDisableDeepCopyOption)
		return unsafe
	})
}

// GetInformer implements cache.Informers.
func (c heldPods) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil || !isPod(obj) {
		return inf, err
	}
	return podInformer{inf}, nil
}

// GetInformerForKind implements cache.Informers.
func (c heldPods) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil || gvk != corev1.SchemeGroupVersion.WithKind("Pod") {
		return inf, err
	}
	return podInformer{inf}, nil
}

// IndexField implements client.FieldIndexer: a pod index extracts from
// the *corev1.Pod.
func (c heldPods) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if isPod(obj) {
		inner := extract
		extract = func(o client.Object) []string {
			if p, ok := asPod(o).(client.Object); ok {
				return inner(p)
			}
			return nil
		}
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// podInformer is the pod informer of a heldPods cache.
type podInformer struct {
	cache.Informer
}

// AddEventHandler implements cache.Informer.
func (i podInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(podHandler{h})
}

// AddEventHandlerWithResyncPeriod implements cache.Informer.
func (i podInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(podHandler{h}, resync)
}

// AddEventHandlerWithOptions implements cache.Informer.
func (i podInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(podHandler{h}, opts)
}

// AddIndexers implements cache.Informer: each index function reads the
// *corev1.Pod.
func (i podInformer) AddIndexers(indexers toolscache.Indexers) error {
	wrapped := make(toolscache.Indexers, len(indexers))
	for name, f := range indexers {
		wrapped[name] = func(obj any) ([]string, error) { return f(asPod(obj)) }
	}
	return i.Informer.AddIndexers(wrapped)
}

// podHandler hands h pods where the informer has heldPods.
type podHandler struct {
	h toolscache.ResourceEventHandler
}

func (p podHandler) OnAdd(obj any, isInInitialList bool) { p.h.OnAdd(asPod(obj), isInInitialList) }
func (p podHandler) OnUpdate(oldObj, newObj any)         { p.h.OnUpdate(asPod(oldObj), asPod(newObj)) }
func (p podHandler) OnDelete(obj any)                    { p.h.OnDelete(asPod(obj)) }
