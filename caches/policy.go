package caches

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// annotationLastApplied is kubectl's copy of the whole applied object; no
// code of the operator reads it from a cached pod, and on pods it is often
// as large as the pod.
const annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Webhooks is the cache policy of the manager's own cache, which every
// replica starts: it holds what the admission webhooks read (ListenerClasses,
// Listeners, claims, volumes, namespaces, storage classes), and the Shared
// types the reconcilers read from it on the leader. managedFields are
// dropped from everything it holds, and claims and volumes keep only the
// fields that are read (TrimClaim, TrimVolume).
func Webhooks() cache.Options {
	return cache.Options{
		DefaultTransform: StripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: {Transform: TrimClaim},
			&corev1.PersistentVolume{}:      {Transform: TrimVolume},
		},
	}
}

// TrimClaim keeps of a PersistentVolumeClaim what the webhooks and the
// reconcilers read: its metadata (without managedFields; the listener
// annotations are there), spec.storageClassName, spec.volumeName and
// status.phase. Requests, capacities, access modes and the rest are dropped;
// nothing writes a claim back from the cache.
func TrimClaim(obj any) (any, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	out := &corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta}
	out.ManagedFields = nil
	out.Spec.StorageClassName = c.Spec.StorageClassName
	out.Spec.VolumeName = c.Spec.VolumeName
	out.Status.Phase = c.Status.Phase
	return out, nil
}

// TrimVolume keeps of a PersistentVolume what the webhooks and the
// reconcilers read: its metadata (without managedFields), the claim it is
// bound to, its node affinity (what pins a listener volume to a node), its
// storage class, the CSI driver and volume handle (not the volume
// attributes, which repeat the claim in every volume) and status.phase.
// Nothing writes a volume back from the cache.
func TrimVolume(obj any) (any, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return obj, nil
	}
	out := &corev1.PersistentVolume{TypeMeta: pv.TypeMeta, ObjectMeta: pv.ObjectMeta}
	out.ManagedFields = nil
	out.Spec.ClaimRef = pv.Spec.ClaimRef
	out.Spec.NodeAffinity = pv.Spec.NodeAffinity
	out.Spec.StorageClassName = pv.Spec.StorageClassName
	if src := pv.Spec.CSI; src != nil {
		out.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: src.Driver, VolumeHandle: src.VolumeHandle}
	}
	out.Status.Phase = pv.Status.Phase
	return out, nil
}

// Shared are the types the webhooks and the reconcilers both read. On the
// leader the reconcilers read, watch and index them in the webhooks' cache
// (see LeaderOnly) instead of holding a second copy.
func Shared() []client.Object {
	return []client.Object{
		&v1alpha1.ListenerClass{},
		&v1alpha1.Listener{},
		&corev1.PersistentVolumeClaim{},
		&corev1.PersistentVolume{},
	}
}

// Reconcilers is the cache policy of the reconcilers' cache, which only the
// leader starts (see LeaderOnly) and which holds what only they read. Pods
// are selected by the listener-volume label: a cluster's other pods are
// never sent to the operator nor held by it. managedFields are dropped from
// everything (from a Service once the operator has applied it), and what the
// reconcilers never read of pods, nodes and EndpointSlices.
func Reconcilers() cache.Options {
	return cache.Options{
		DefaultTransform: StripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Label:     labels.SelectorFromSet(labels.Set{v1alpha1.LabelListenerVolume: "true"}),
				Transform: TrimPod,
			},
			&corev1.Node{}:               {Transform: TrimNode},
			&corev1.Service{}:            {Transform: TrimService},
			&discoveryv1.EndpointSlice{}: {Transform: TrimEndpointSlice},
		},
	}
}

// TrimService drops a Service's managedFields unless the operator still has
// to hand the fields it created the Service with over to server-side apply
// (csaupgrade reads and rewrites the whole list then): that is, unless an
// Update entry of the operator's field manager is there. The apply that
// follows turns it into an Apply entry, and the next event stores the
// Service without them.
func TrimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	for _, f := range svc.ManagedFields {
		if f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationUpdate {
			return svc, nil
		}
	}
	svc.ManagedFields = nil
	return svc, nil
}

// TrimEndpointSlice keeps of an EndpointSlice its metadata (without
// managedFields) and, of each endpoint, the node it runs on and its
// conditions: which nodes serve a Service is all the reconcilers read.
// Addresses, target references, hints, zones and ports are dropped.
func TrimEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &discoveryv1.EndpointSlice{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta, AddressType: s.AddressType}
	out.ManagedFields = nil
	if len(s.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, ep := range s.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{NodeName: ep.NodeName, Conditions: ep.Conditions}
		}
	}
	return out, nil
}

// StripManagedFields drops metadata.managedFields, which nothing but the
// API server's apply logic reads and which is often the largest part of an
// object. Objects that are not Kubernetes objects pass unchanged.
func StripManagedFields(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// TrimPod keeps of a Pod what the reconcilers read: its metadata (without
// managedFields and kubectl's last-applied copy), the volumes backed by a
// claim (by name, or generic ephemeral without its claim template; other
// volumes are dropped), and, when it has such a volume, the name and ports
// of each container that has ports (a per-claim Listener's ports come from
// its pods' container ports), spec.nodeName, the required node affinity
// (what pins a pod to a node) and status.phase. Images, env, probes,
// resources, init containers, pod (anti-)affinity, conditions and the rest
// of the status are dropped.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta}
	out.ManagedFields = nil
	if _, ok := out.Annotations[annotationLastApplied]; ok {
		ann := make(map[string]string, len(out.Annotations)-1)
		for k, v := range out.Annotations {
			if k != annotationLastApplied {
				ann[k] = v
			}
		}
		out.Annotations = ann
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		case v.Ephemeral != nil:
			// The claim is "<pod>-<volume>" and the reconcilers read it,
			// not its template (which repeats the claim's annotations
			// and spec in every pod).
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
		}
	}
	if len(out.Spec.Volumes) > 0 {
		// A per-claim Listener takes its ports from its pods' containers;
		// a pod without claims is never asked for them.
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
			}
		}
	}
	out.Spec.NodeName = pod.Spec.NodeName
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		// What pins a pod to a node; pod (anti-)affinity can be large.
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		}}
	}
	out.Status.Phase = pod.Status.Phase
	return out, nil
}

// TrimNode drops a Node's managedFields and its image list (status.images,
// tens of KB on a busy node); addresses, conditions, labels and the rest stay.
func TrimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.ManagedFields = nil
	n.Status.Images = nil
	return n, nil
}
