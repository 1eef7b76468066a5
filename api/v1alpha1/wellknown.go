package v1alpha1

// Names that the webhooks, the reconciler and the CSI driver must agree on.
// They are the Stackable listener operator's names, so objects written for it
// keep working here.
const (
	// AnnotationListenerClass on a PersistentVolumeClaim asks for a Listener of
	// that class, created for (and owned by) the claim. On a StatefulSet it picks
	// the class of the injected claim template.
	AnnotationListenerClass = "listeners.stackable.tech/listener-class"

	// AnnotationListenerName on a PersistentVolumeClaim binds the claim to an
	// existing Listener of that name in the claim's namespace. On a StatefulSet
	// it makes every replica share that Listener.
	AnnotationListenerName = "listeners.stackable.tech/listener-name"

	// LabelVolumeListener is the label of a listener PersistentVolume that
	// records the Listener (in the claim's namespace) the volume was
	// provisioned and is published for; the Stackable operator sets the
	// same label. A claim's listener annotations are immutable once it is
	// bound; one changed while the webhooks were down does not move the
	// volume (the claim reconciler says so with an event). A label, so
	// that a cache that drops volumeAttributes still has it.
	LabelVolumeListener = "listeners.stackable.tech/listener-name"

	// AnnotationPodListenersHash on a PodListeners is the hash of the
	// addresses it was written with (before AddressesAtStart is recorded):
	// the operator writes it, and reads it to know whether to write again.
	AnnotationPodListenersHash = "listeners.stackable.tech/podlisteners-hash"
	// AnnotationAddressesChanged on a PodListeners says that a volume's
	// addresses differ from those the pod started with (AddressesAtStart
	// is set): its class may ask for the pod to restart.
	AnnotationAddressesChanged = "listeners.stackable.tech/addresses-changed"

	// AnnotationDefaultClass marks the ListenerClass used when a claim names
	// neither a class nor a listener. On a Namespace, its value names the
	// default class for claims in that namespace.
	AnnotationDefaultClass = "listeners.stackable.tech/is-default-class"

	// DriverName is the CSI driver name and the name of the StorageClass that
	// listener volumes use.
	DriverName = "listeners.stackable.tech"

	// StorageClassName is the StorageClass of listener volumes.
	StorageClassName = DriverName

	// TopologyKeyHostname is the CSI topology key (and PersistentVolume node
	// affinity key) that pins a listener volume to a node.
	TopologyKeyHostname = "listeners.stackable.tech/hostname"

	// PodSelectorLabelPrefix prefixes the per-Listener label that the Service
	// of a Listener selects pods by (see names.PodSelectorLabel).
	PodSelectorLabelPrefix = "listener.stackable.tech/mnt."

	// PodSelectorLabelValue is the value of the per-Listener pod selector label.
	PodSelectorLabelValue = "true"

	// AnnotationStatefulSetClaimTemplate on a listener claim template of a
	// StatefulSet (and so on every claim made from it) names that template:
	// the claim "<template>-<pod>" belongs to the StatefulSet's pod "<pod>",
	// and the per-claim Listener made for it selects that pod by the
	// statefulset.kubernetes.io/pod-name label that the StatefulSet
	// controller sets, so that the pod needs no label of the operator (no
	// admission patch). The StatefulSet webhook puts it on the per-claim
	// listener template it injects; a template of the user's own may carry
	// it (see claims.StatefulSetPod).
	AnnotationStatefulSetClaimTemplate = "listeners.stackable.tech/statefulset-claim-template"

	// AnnotationStatefulSetPod on a Listener names the StatefulSet pod that
	// its Service selects, by LabelStatefulSetPodName, instead of by the
	// per-Listener selector label. The claim reconciler sets it when it
	// creates the Listener of a claim made from a template annotated with
	// AnnotationStatefulSetClaimTemplate.
	AnnotationStatefulSetPod = "listeners.stackable.tech/statefulset-pod"

	// LabelStatefulSetPodName is the label the StatefulSet controller puts
	// on each of its pods, with the pod's name.
	LabelStatefulSetPodName = "statefulset.kubernetes.io/pod-name"

	// LabelListenerVolume marks, with the value "true", what belongs to a
	// listener volume, so that the operator's caches select it and a
	// cluster's other objects cost it nothing:
	//   - a pod that mounts (or may mount: its claim did not exist yet when
	//     it was admitted) a listener volume: the pod webhook sets it,
	//     opted-in StatefulSets carry it in their pod template;
	//   - a listener claim (of the listener storage class): the claim
	//     webhook sets it when the claim is created, and refuses its removal;
	//   - a listener PersistentVolume (of this driver, bound to a listener
	//     claim): the claim reconciler sets it once the claim is bound.
	// The controller adds it to pods and claims it finds without it
	// (admitted while the webhooks were unavailable, or before this
	// version): the relabel scans.
	LabelListenerVolume = "listeners.stackable.tech/listener-volume"

	// LabelEnabled opts a StatefulSet (or a bare Pod) into listener volume
	// injection when set to "true".
	LabelEnabled = "listeners.stackable.tech/enabled"

	// AnnotationMountInitContainers on a pod (or pod template) names, comma
	// separated, the init containers that also get the listener mount; "*"
	// names all of them. Init containers usually run before the address is
	// needed, so they only get it when asked.
	AnnotationMountInitContainers = "listeners.stackable.tech/mount-init-containers"

	// VolumeName is the name of the injected listener volume (and claim template).
	VolumeName = "listener"

	// MountPath is where the injected listener volume is mounted in containers.
	MountPath = "/stackable/listener"

	// LabelServiceKind and LabelServiceKindValue (app.kubernetes.io/name=
	// listener) are on every Service the operator makes, as they were on the
	// Stackable operator's. The reconcilers' cache holds only the Services
	// that carry them (caches.Reconcilers): a cluster's other Services are
	// never sent to the operator.
	LabelServiceKind      = "app.kubernetes.io/name"
	LabelServiceKindValue = "listener"

	// FieldManager is the field manager (and app.kubernetes.io/managed-by value)
	// of every object the operator writes.
	FieldManager = "listener-operator"

	// AnnotationHandoverToClaim on a per-claim Listener that has no controller
	// owner reference names the claim (by name, in the Listener's namespace)
	// that may adopt it. Node-loss recovery sets it when it deletes a claim
	// pinned to a lost node, so that the claim recreated under the same name
	// keeps the Listener (its Service, node ports and name); the claim
	// reconciler adopts the Listener (controller reference to the new claim's
	// UID) and removes the annotation. A Listener without it and without a
	// controller is never adopted: it may be a user's own.
	AnnotationHandoverToClaim = "listeners.stackable.tech/handover-to-claim"

	// PodListenersNamePrefix prefixes the name of a pod's PodListeners object;
	// the rest is the pod's UID.
	PodListenersNamePrefix = "pod-"
)

// Keys of the CSI volume context and parameters set by Kubernetes components.
const (
	// ParamPVCName and ParamPVCNamespace are passed to CreateVolume by the
	// external-provisioner with --extra-create-metadata.
	ParamPVCName      = "csi.storage.k8s.io/pvc/name"
	ParamPVCNamespace = "csi.storage.k8s.io/pvc/namespace"
	ParamPVName       = "csi.storage.k8s.io/pv/name"

	// ContextPodName and ContextPodNamespace are passed to NodePublishVolume
	// by kubelet when the CSIDriver has podInfoOnMount: true.
	ContextPodName      = "csi.storage.k8s.io/pod.name"
	ContextPodNamespace = "csi.storage.k8s.io/pod.namespace"
	ContextPodUID       = "csi.storage.k8s.io/pod.uid"
)

// Ready condition reasons on a Listener.
const (
	// ConditionReady is the condition type that says whether a Listener's
	// Service exists and its addresses are published.
	ConditionReady = "Ready"

	ReasonReady                = "Ready"
	ReasonClassNotFound        = "ClassNotFound"
	ReasonNoClass              = "NoClass"
	ReasonForeignService       = "ForeignService"
	ReasonAwaitingLoadBalancer = "AwaitingLoadBalancer"
	ReasonNoNodes              = "NoNodes"
	ReasonInvalid              = "Invalid"
	// ReasonServiceRefused: the API server refused to create or update the
	// Listener's Service for a reason outside the Listener (a ResourceQuota,
	// an admission policy, the cluster's Service IP or node port range
	// being full); the operator tries again when a ResourceQuota of the
	// namespace changes, and on its own after 15 s doubling up to 5 min.
	ReasonServiceRefused = "ServiceRefused"
)

// Pinned-node loss (reconcile/nodeloss, docs/nodeloss.md).
const (
	// AnnotationReleasePinnedNode on a listener claim asks the operator to
	// release the claim from the node named in the value, whatever its
	// class's policy says: the manual un-pin that keeps the Listener, its
	// name and node ports. It only acts while the claim is pinned to exactly
	// that node, so a forgotten annotation cannot release the next pin.
	AnnotationReleasePinnedNode = "listeners.stackable.tech/release-pinned-node"

	// AnnotationReleasedFromNode on a claim's own Listener records the node
	// node-loss recovery last released the claim from. It is written with
	// the handover annotation, before the claim is deleted, and stays after
	// the recreated claim adopts the Listener: whichever replica leads next
	// knows that a Pending pod of the claim that still requires that node
	// may be deleted for its controller to recreate it, even when the
	// claim's class can no longer be read.
	AnnotationReleasedFromNode = "listeners.stackable.tech/released-from-node"

	// AnnotationReleasedAt on a handed-over Listener is when node-loss
	// recovery released its claim (RFC 3339), written with the handover
	// annotation: the handover timeout counts from it.
	AnnotationReleasedAt = "listeners.stackable.tech/released-at"

	// ConditionPinnedNodesAvailable on a per-claim Listener says whether the
	// node its claim's volume is pinned to is there. It is only written once
	// a node was lost: Listeners that never lost one do not carry it.
	ConditionPinnedNodesAvailable = "PinnedNodesAvailable"

	// Reasons of ConditionPinnedNodesAvailable and of node loss's events.

	// ReasonNodeLost: the pinned node is gone and the pin is not released
	// (yet, or by policy).
	ReasonNodeLost = "NodeLost"
	// ReasonReleased: the claim was deleted from the lost node; the Listener
	// waits for the claim recreated under the same name.
	ReasonReleased = "Released"
	// ReasonAvailable: the claim is pinned to a node that is there.
	ReasonAvailable = "Available"
	// ReasonPodRecreated: a Pending pod that required the lost node was
	// deleted so that its controller recreates it without that requirement.
	ReasonPodRecreated = "PodRecreated"
	// ReasonHandoverExpired: a handed-over Listener was deleted because no
	// claim of its name came back.
	ReasonHandoverExpired = "HandoverExpired"
)

// AnnotationServiceHash on a Listener's Service records a hash of the
// Service the operator last applied. Comparing fields tells whether
// something drifted; the hash tells whether the operator stopped wanting a
// field (an annotation or override removed), which a field comparison
// cannot see.
const AnnotationServiceHash = "listeners.stackable.tech/service-hash"
