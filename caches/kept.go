package caches

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
)

// annotationLastApplied is kubectl's copy of the whole applied object; no
// code of the operator reads it from a cached pod, and on pods it is often
// as large as the pod.
const annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Webhooks are the options of the manager's own cache, which every
// replica starts: it holds what the admission webhooks read (ListenerClasses,
// Listeners, listener claims and volumes, storage classes), and
// the Shared types the reconcilers read from it on the leader.
// managedFields are dropped from everything it holds. Claims and volumes
// are selected by the listener-volume label (Marked), which the claim
// webhook puts on listener claims and the claim reconciler on their
// volumes: the cluster's other claims and volumes are never sent to the
// operator (the pod webhook remembers a bounded number of the others it
// read). They keep only the fields that are read (TrimClaim, TrimVolume).
// Namespaces are not held here: NamespaceDefaults keeps the little the
// webhooks read of them. Each call has maps of its own to share among the
// objects of the one cache it makes (interner); the exported transforms
// (TrimPod, Compact, ...) share none.
func Webhooks() cache.Options {
	in := newInterner()
	return cache.Options{
		DefaultTransform: in.compact,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: {Label: Marked(), Transform: in.trimClaim},
			&corev1.PersistentVolume{}:      {Label: Marked(), Transform: in.trimVolume},
		},
	}
}

// Marked selects what carries the listener-volume label (claims.Marked):
// listener pods, claims and volumes.
func Marked() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelListenerVolume: "true"})
}

// TrimClaim keeps of a PersistentVolumeClaim what the webhooks and the
// reconcilers read: its metadata (without managedFields, finalizers and
// owners, and
// of the annotations only the operator's: the listener annotations are
// there), spec.storageClassName, spec.volumeName and status.phase; while it
// is not bound, also what its volume is made from (keepForProvisioning).
// Capacities, and once bound requests and access modes, are dropped;
// nothing writes a claim back from the cache.
//
// A claim that is not a listener claim (claims.Requested) keeps
// only its name, namespace, UID, resourceVersion and storage class: enough
// for the pod webhook to know it exists and is not a listener claim, which
// is all anything asks of it. Its labels, annotations (kubectl's
// last-applied copy is often the largest part) and owners are dropped.
func TrimClaim(obj any) (any, error) { return (*interner)(nil).trimClaim(obj) }

func (in *interner) trimClaim(obj any) (any, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	if !claims.Requested(c.Annotations, c.Spec.StorageClassName) {
		*c = corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: minimalMeta(c.ObjectMeta),
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: c.Spec.StorageClassName}}
		in.meta(&c.ObjectMeta)
		internPtr(c.Spec.StorageClassName)
		return c, nil
	}
	out := corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta}
	out.ManagedFields = nil
	out.Finalizers = nil
	out.OwnerReferences = nil // an ephemeral claim's pod: nothing reads it
	out.Annotations = operatorEntries(c.Annotations)
	if c.Spec.VolumeName == "" {
		out.Annotations, out.Spec = keepForProvisioning(out.Annotations, c)
	}
	out.Spec.StorageClassName = c.Spec.StorageClassName
	out.Spec.VolumeName = c.Spec.VolumeName
	out.Status.Phase = c.Status.Phase
	*c = out
	in.meta(&c.ObjectMeta)
	internPtr(c.Spec.StorageClassName)
	internString(&c.Status.Phase)
	return c, nil
}

// keepForProvisioning returns the annotations and spec an unbound listener
// claim c keeps for the operator's provisioner (reconcile/provision), which
// makes its volume from them (volumes.PersistentVolume): to annotations,
// the scheduler's selected node (a pinned class's volume is pinned there);
// in the spec, the access modes, the volume mode and the requested size.
// Once the claim is bound nothing reads them, and the next event of the
// claim drops them.
func keepForProvisioning(annotations map[string]string, c *corev1.PersistentVolumeClaim) (map[string]string, corev1.PersistentVolumeClaimSpec) {
	if node := c.Annotations[volumes.AnnotationSelectedNode]; node != "" {
		if annotations == nil {
			annotations = make(map[string]string, 1)
		}
		annotations[volumes.AnnotationSelectedNode] = node
	}
	spec := corev1.PersistentVolumeClaimSpec{AccessModes: c.Spec.AccessModes, VolumeMode: c.Spec.VolumeMode}
	if size, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: size}
	}
	return annotations, spec
}

// TrimVolume keeps of a PersistentVolume what the webhooks and the
// reconcilers read: its metadata (without managedFields, finalizers and
// annotations), the claim it is bound to, its node affinity (what pins a
// listener volume to a node), its storage class, the CSI driver and volume
// handle (not the volume attributes, which repeat the claim in every
// volume) and status.phase.
// Nothing writes a volume back from the cache.
//
// A volume of another driver (or none) keeps only its name, UID and
// resourceVersion: nothing reads more of it (a listener claim is bound to a
// volume of this driver, and only those are pinned to a node).
func TrimVolume(obj any) (any, error) { return (*interner)(nil).trimVolume(obj) }

func (in *interner) trimVolume(obj any) (any, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return obj, nil
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != v1alpha1.DriverName {
		*pv = corev1.PersistentVolume{TypeMeta: pv.TypeMeta, ObjectMeta: minimalMeta(pv.ObjectMeta)}
		return pv, nil
	}
	in.volume(pv)
	out := corev1.PersistentVolume{TypeMeta: pv.TypeMeta, ObjectMeta: pv.ObjectMeta}
	out.ManagedFields = nil
	out.Finalizers = nil
	out.Annotations = nil
	out.Spec.ClaimRef = pv.Spec.ClaimRef
	out.Spec.NodeAffinity = pv.Spec.NodeAffinity
	out.Spec.StorageClassName = pv.Spec.StorageClassName
	if src := pv.Spec.CSI; src != nil {
		out.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: src.Driver, VolumeHandle: inName(src.VolumeHandle, out.Name)}
	}
	out.Status.Phase = pv.Status.Phase
	*pv = out
	return pv, nil
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
		// The claim webhook and the provisioner (reconcile/provision).
		&storagev1.StorageClass{},
	}
}

// operatorEntries are the annotations (or labels) of the operator's own
// prefix (the listener annotations, the StatefulSet claim template, the
// pinned-node release; a node's CSI topology label): kubectl's last-applied
// copy, the binding annotations of the volume controllers and the labels
// of a node's other tools are not read.
func operatorEntries(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if strings.HasPrefix(k, operatorAnnotationPrefix) {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[k] = v
		}
	}
	return out
}

// podLabelsRead are the labels of a pod the reconcilers read: the
// operator's (the listener-volume label, the pod selector labels
// listener.stackable.tech/mnt.*) and the StatefulSet pod name, which a
// Listener of one StatefulSet pod selects by. The takeover of a Service
// with another selector reads pods from the API server, not from here.
func podLabelsRead(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if PodLabelKept(k) {
			if out == nil {
				out = make(map[string]string, 4)
			}
			out[k] = v
		}
	}
	return out
}

// PodLabelKept reports whether the reconcilers' cache keeps a pod label of
// key k (TrimPod): the operator's own labels and the StatefulSet pod name.
func PodLabelKept(k string) bool {
	return strings.HasPrefix(k, operatorAnnotationPrefix) || strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) || k == v1alpha1.LabelStatefulSetPodName
}

// operatorAnnotationPrefix is the prefix of the operator's annotations.
const operatorAnnotationPrefix = "listeners.stackable.tech/"

// minimalMeta is the identity of an object the caches hold only to know it
// exists: namespace, name, UID and resourceVersion.
func minimalMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

// Reconcilers are the options of the reconcilers' cache, which only the
// leader starts (see LeaderOnly) and which holds what only they read. Pods
// are selected by the listener-volume label: a cluster's other pods are
// never sent to the operator nor held by it. Services are selected by
// app.kubernetes.io/name=listener, which every Service the operator makes
// carries (the Stackable operator's too, so the takeover finds them): the
// cluster's other Services are not held either. A foreign Service under a
// name a Listener wants is found by a live read when creating the Service
// fails (see reconcile). EndpointSlices are not held at all: the nodes a
// Listener's pods run on come from the pods themselves. managedFields are
// dropped from everything (from a Service once the operator has applied
// it), and what the reconcilers never read of pods and nodes. Events are
// held only when they are Warnings about Services (ServiceWarnings).
func Reconcilers() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{v1alpha1.LabelServiceKind: v1alpha1.LabelServiceKindValue})
	in := newInterner()
	return cache.Options{
		DefaultTransform: in.compact,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:     {Label: Marked(), Transform: in.trimPod},
			&corev1.Node{}:    {Transform: in.trimNode},
			&corev1.Service{}: {Label: ours, Transform: in.trimService},
			// What load balancers say (reconcile/listener/lbwarning.go).
			&eventsv1.Event{}: {Field: ServiceWarnings()},
		},
	}
}

// ServiceWarnings selects the Warning events about Services, the only
// events the reconcilers hold: the API server sends no others.
func ServiceWarnings() fields.Selector {
	return fields.AndSelectors(fields.OneTermEqualSelector("regarding.kind", "Service"), fields.OneTermEqualSelector("type", corev1.EventTypeWarning))
}

// TrimService drops a Service's managedFields, but for the operator's
// fields still to be handed over to server-side apply (HandoverPending: it
// created the Service and has not applied it since): then it keeps the
// entries without their field sets, which is enough to know it. The listener
// reconciler reads such a Service from the API server before it hands the
// fields over (csaupgrade reads and rewrites the whole list). Field sets
// cost some 700 bytes a Service, and a Service the operator created keeps
// its Update entry until the operator next changes it, often never.
func TrimService(obj any) (any, error) { return (*interner)(nil).trimService(obj) }

func (in *interner) trimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	in.service(svc)
	if !HandoverPending(svc) {
		svc.ManagedFields = nil
		return svc, nil
	}
	kept := make([]metav1.ManagedFieldsEntry, len(svc.ManagedFields))
	for i, f := range svc.ManagedFields {
		kept[i] = metav1.ManagedFieldsEntry{Manager: intern(f.Manager), Operation: f.Operation}
	}
	svc.ManagedFields = kept
	return svc, nil
}

// HandoverPending reports whether the operator's field manager still owns
// fields of o through an Update entry (it created o, and has not applied it
// since): before its next apply those fields are handed over to its apply
// manager, or the apply could not remove them. It answers the same for an
// object as the API server has it and as TrimService keeps it.
func HandoverPending(o metav1.Object) bool {
	for _, f := range o.GetManagedFields() {
		if f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationUpdate {
			return true
		}
	}
	return false
}

// conditionStatus is s as the constant of its value (a string the decoder
// made for each object otherwise).
func conditionStatus(s corev1.ConditionStatus) corev1.ConditionStatus {
	switch s {
	case corev1.ConditionTrue:
		return corev1.ConditionTrue
	case corev1.ConditionFalse:
		return corev1.ConditionFalse
	default:
		return corev1.ConditionUnknown
	}
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

// TrimPod keeps of a Pod what the reconcilers read (and the CSI node
// plugin, of the pods on its node: the node, the UID, the ports of a pod
// that mounts a claim, which every pod it publishes for does): its metadata (without
// managedFields, finalizers and owners; of the annotations only the
// operator's, of the labels those podLabelsRead keeps), the volumes
// backed by a claim (by name, or generic ephemeral without its claim
// template; other volumes are dropped), and, when it has such a volume, the
// ports of its containers, in order, as one container (a per-claim
// Listener's ports come from its pods' container ports), spec.nodeName and
// status.phase; while the pod is Pending (no node yet), also its controller
// and its required node affinity (what pins it to a node). Images, env,
// probes, resources, init containers, pod (anti-)affinity, the conditions
// but Ready (its status alone: a NodePort Listener that publishes only
// ready pods' nodes reads it) and the rest of the status are dropped.
func TrimPod(obj any) (any, error) { return (*interner)(nil).trimPod(obj) }

func (in *interner) trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta}
	out.ManagedFields = nil
	out.OwnerReferences = nil
	// Pinned-node loss reads a pod's controller and node affinity only
	// while the pod is Pending (it deletes such a pod, if a controller
	// recreates it, when its pinned node is gone); a pod bound to a node
	// is never unbound.
	pending := pod.Spec.NodeName == ""
	if ref := metav1.GetControllerOf(pod); ref != nil && pending {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	out.Finalizers = nil
	out.Annotations = operatorEntries(pod.Annotations)
	out.Labels = podLabelsRead(pod.Labels)
	out.Spec.Volumes = claimVolumes(pod.Spec.Volumes)
	if len(out.Spec.Volumes) > 0 {
		// A per-claim Listener takes its ports from its pods' containers;
		// a pod without claims is never asked for them. Read only as one
		// list in container order (api/ports).
		out.Spec.Containers = portsOnly(pod.Spec.Containers)
	}
	out.Spec.NodeName = pod.Spec.NodeName
	if a := pod.Spec.Affinity; pending && a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		// What pins a pod to a node; pod (anti-)affinity can be large.
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
	}
	out.Status.Phase = pod.Status.Phase
	out.Spec.ReadinessGates, out.Status.Conditions = gateKept(pod)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			// Constants: the condition costs no string of its own.
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: conditionStatus(c.Status)})
			break
		}
	}
	*pod = out
	in.pod(pod)
	return pod, nil
}

// gateKept is what the pod controller reads of the readiness gate it sets
// (ListenerClass spec.podReadiness): the gate, when the pod has it, and its
// condition (the controller writes it only when it changes).
func gateKept(pod *corev1.Pod) ([]corev1.PodReadinessGate, []corev1.PodCondition) {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType != v1alpha1.PodConditionAddressesReady {
			continue
		}
		gates := []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAddressesReady}}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1alpha1.PodConditionAddressesReady {
				return gates, []corev1.PodCondition{{Type: c.Type, Status: conditionStatus(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}}
			}
		}
		return gates, nil
	}
	return nil, nil
}

// claimVolumes are the volumes backed by a claim: by name, or generic
// ephemeral, whose claim is "<pod>-<volume>" and which keeps no template
// (the reconcilers read the claim, not the template, which repeats the
// claim's annotations and spec in every pod); nil if there are none.
func claimVolumes(in []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range in {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		case v.Ephemeral != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
		}
	}
	return out
}

// portsOnly is the ports of every container, in order, as one container
// named after the first that has any; nil if none has.
func portsOnly(in []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range in {
		if len(c.Ports) == 0 {
			continue
		}
		if out == nil {
			out = []corev1.Container{{Name: c.Name}}
		}
		out[0].Ports = append(out[0].Ports, c.Ports...)
	}
	return out
}

// pod makes the repeated strings of a trimmed pod canonical: its
// metadata, node, phase, volume, container and port names, protocols and
// node affinity.
func (in *interner) pod(p *corev1.Pod) {
	in.meta(&p.ObjectMeta)
	internString(&p.Spec.NodeName)
	internString(&p.Status.Phase)
	for i := range p.Spec.Volumes {
		internString(&p.Spec.Volumes[i].Name)
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		internString(&c.Name)
		for j := range c.Ports {
			internString(&c.Ports[j].Name)
			internString(&c.Ports[j].Protocol)
		}
	}
	if a := p.Spec.Affinity; a != nil {
		internNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
}

// TrimNode keeps of a Node what the reconcilers read: its metadata without
// managedFields, annotations (kubeadm's, the CNI's, the CSI node IDs; only
// the operator's node address annotation stays) and
// the labels of other tools (a cloud node has dozens: instance type, zone,
// node pool, the kubelet's); of the labels only the operator's, among them
// the CSI topology label the node plugin's registration adds (the
// provisioner reads it); spec.unschedulable and the taints, the addresses
// (address selection, api/addresses) and the Ready condition (pinned-node
// loss). Images, capacity, node info and the other conditions are dropped.
func TrimNode(obj any) (any, error) { return (*interner)(nil).trimNode(obj) }

func (in *interner) trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: n.ObjectMeta}
	out.ManagedFields = nil
	out.Annotations = nil
	// The one annotation address selection reads (nodeAddress: Annotation):
	// a fixed key, so what a node keeps does not depend on the classes.
	if v, ok := n.Annotations[v1alpha1.AnnotationNodeAddress]; ok {
		out.Annotations = map[string]string{v1alpha1.AnnotationNodeAddress: v}
	}
	out.Labels = operatorEntries(n.Labels)
	out.Spec.Unschedulable = n.Spec.Unschedulable
	out.Spec.Taints = n.Spec.Taints
	out.Status.Addresses = n.Status.Addresses
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			// Heartbeat times change every few seconds and nothing reads them.
			c.LastHeartbeatTime = metav1.Time{}
			out.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	in.meta(&out.ObjectMeta)
	return out, nil
}
