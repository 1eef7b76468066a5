package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceType is the kind of Service a ListenerClass creates.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ServiceType string

const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
)

// TrafficPolicy is a Service's externalTrafficPolicy.
// +kubebuilder:validation:Enum=Cluster;Local
type TrafficPolicy string

const (
	TrafficPolicyCluster TrafficPolicy = "Cluster"
	TrafficPolicyLocal   TrafficPolicy = "Local"
)

// PreferredAddressType says which kind of address a ListenerClass publishes
// when both an IP and a hostname are known.
// +kubebuilder:validation:Enum=Hostname;IP;HostnameConservative
type PreferredAddressType string

const (
	PreferredAddressHostname PreferredAddressType = "Hostname"
	PreferredAddressIP       PreferredAddressType = "IP"
	// PreferredAddressHostnameConservative prefers IPs for NodePort classes
	// (node hostnames are often not resolvable outside the cluster) and
	// hostnames otherwise.
	PreferredAddressHostnameConservative PreferredAddressType = "HostnameConservative"
)

// ListenerClassSpec is cluster policy: how Listeners of this class are exposed.
// Fields that do not apply to the serviceType (loadBalancerClass,
// pinnedNodePorts, serviceExternalTrafficPolicy) are ignored and draw an
// admission warning, not a schema error: the Stackable operator accepted them
// and stored classes carry them (see docs/migration.md).
type ListenerClassSpec struct {
	// ServiceType is the type of the Service created for each Listener.
	// +required
	ServiceType ServiceType `json:"serviceType"`

	// ServiceAnnotations are added to every Service created for this class.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// ServiceExternalTrafficPolicy sets externalTrafficPolicy on NodePort and
	// LoadBalancer Services. Unset leaves the Kubernetes default.
	// +optional
	ServiceExternalTrafficPolicy *TrafficPolicy `json:"serviceExternalTrafficPolicy,omitempty"`

	// PreferredAddressType picks hostnames or IPs when both are known.
	// +kubebuilder:default=HostnameConservative
	// +optional
	PreferredAddressType PreferredAddressType `json:"preferredAddressType,omitempty"`

	// LoadBalancerAllocateNodePorts sets allocateLoadBalancerNodePorts on
	// LoadBalancer Services.
	// +kubebuilder:default=true
	// +optional
	LoadBalancerAllocateNodePorts *bool `json:"loadBalancerAllocateNodePorts,omitempty"`

	// LoadBalancerClass sets loadBalancerClass on LoadBalancer Services.
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`

	// PinnedNodePorts pins each listener volume (and so its pod) to the node
	// it was first scheduled on, so a NodePort address stays stable.
	// +kubebuilder:default=false
	// +optional
	PinnedNodePorts *bool `json:"pinnedNodePorts,omitempty"`

	// PinnedNodeLoss says what happens to a volume pinned to a node that is
	// gone (pinnedNodePorts: true only; other classes pin nothing). Unset
	// means release: NodeDeleted.
	// +optional
	PinnedNodeLoss *PinnedNodeLoss `json:"pinnedNodeLoss,omitempty"`

	// ServiceOverrides is a partial Service merged over the generated one,
	// after serviceAnnotations and before a Listener's objectOverrides.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	ServiceOverrides *runtime.RawExtension `json:"serviceOverrides,omitempty"`

	// LockedServiceFields are fields of the Service, besides the exposure
	// fields every class decides (see docs/webhooks.md), that a Listener's
	// objectOverrides may not change: "spec.<field>" (e.g.
	// "spec.sessionAffinity"), "metadata.annotations[<key>]" or
	// "metadata.labels[<key>]". Whatever the class makes of them (or
	// leaves unset) stays. Empty by default: other fields follow the
	// precedence class < Listener.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=330
	// +optional
	LockedServiceFields []string `json:"lockedServiceFields,omitempty"`

	// TenantMetadata lets tenants put more labels and annotations on the
	// Services of this class than the built-in allow-list does (unprefixed
	// keys and the workload prefixes listed in docs/webhooks.md), through a
	// Listener's labels, its claim's labels or its objectOverrides. Exposure
	// keys and the keys in lockedServiceFields stay the class's even when a
	// pattern here matches them.
	// +optional
	TenantMetadata *TenantMetadataPolicy `json:"tenantMetadata,omitempty"`

	// --- address features (see addresses_types.go) ---

	// Certificate keeps a cert-manager Certificate per Listener of the
	// class that names the Listener's addresses; its Secret is named in the
	// Listener's status.certificateSecretName.
	// +optional
	Certificate *ListenerCertificate `json:"certificate,omitempty"`

	// AddressChange says what happens to running pods whose addresses
	// changed since they started (default: an event and a record in their
	// PodListeners only).
	// +optional
	AddressChange *AddressChangePolicy `json:"addressChange,omitempty"`

	// PodReadiness says whether the pods that mount a listener volume of
	// the class are Ready only once clients can reach them at the
	// addresses they were told: Gate adds the readiness gate
	// listeners.stackable.tech/addresses-ready to such pods at admission
	// and the operator sets its condition; None (the default) adds none.
	// Readiness gates cannot change after a pod is created: a change here
	// applies to pods created after it.
	// +kubebuilder:validation:Enum=Gate;None
	// +optional
	PodReadiness *PodReadinessPolicy `json:"podReadiness,omitempty"`

	// Hostname publishes a DNS name per Listener (external-dns annotation
	// on the Service, first published address).
	// +optional
	Hostname *HostnamePolicy `json:"hostname,omitempty"`

	// StickyNodePorts requests the node ports a NodePort Listener recorded
	// in status.nodePorts again whenever its Service is created anew
	// (deleted by hand, restored, recreated by a migration), so clients keep
	// their host:port. Unset means true; false lets the API server pick new
	// ones. Only what the operator recorded is requested, never a value
	// from a Listener's spec.
	// +optional
	StickyNodePorts *bool `json:"stickyNodePorts,omitempty"`

	// NodePortRange makes the Services of a NodePort (or LoadBalancer)
	// class take their node ports from this band: the per-claim Listener of
	// StatefulSet replica i gets from + i*n + j for its port j (n ports
	// each), any other Listener the last free block of n (else the last
	// free ports, so that the replicas keep theirs). Meant for one
	// workload (a class per Kafka cluster, say): several workloads on one
	// range get their blocks first come, first served. Keep it inside the
	// API server's static node-port band (docs/install.md).
	// +optional
	NodePortRange *NodePortRange `json:"nodePortRange,omitempty"`

	// LoadBalancerSharing gives the Listeners of one workload (one
	// StatefulSet's per-replica Listeners and a Listener its pods share,
	// within one namespace) one load-balancer IP, replica i on Service
	// ports from + i*n + j. serviceType LoadBalancer only, with
	// externalTrafficPolicy Cluster (docs/reconcile.md, "Shared load
	// balancers").
	// +optional
	LoadBalancerSharing *LoadBalancerSharing `json:"loadBalancerSharing,omitempty"`

	// NodeAddress says where a NodePort Listener reads the address clients
	// reach a node on: Status (the default: the node's own addresses) or
	// Annotation (the node's listeners.stackable.tech/address annotation
	// first, for nodes behind NAT).
	// +optional
	NodeAddress NodeAddressSource `json:"nodeAddress,omitempty"`

	// IPFamilyPolicy is the ipFamilyPolicy of the class's Services
	// (SingleStack, PreferDualStack, RequireDualStack). Unset leaves the
	// cluster's default.
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	// +optional
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`

	// IPFamilies are the ipFamilies of the class's Services, preferred
	// first. A NodePort Listener publishes one address per family of its
	// Service, IPv4 first unless this list starts with IPv6.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=IPv4;IPv6
	// +optional
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`

	// Gateway routes every Listener of the class through shared Gateways
	// (Gateway API): a TLSRoute per Listener, whose hostname is the one
	// spec.hostname.template gives it, and the Listener publishes that name
	// with the Gateway listener's port. Requires serviceType ClusterIP and
	// spec.hostname (docs/reconcile.md, "Gateway classes").
	// +optional
	Gateway *ListenerGateway `json:"gateway,omitempty"`

	// --- end of address features ---
}

// TenantMetadataMode says what happens to a tenant's label or annotation
// that the class does not allow.
// +kubebuilder:validation:Enum=Enforce;Warn
type TenantMetadataMode string

const (
	// TenantMetadataEnforce leaves keys the class does not allow off the
	// Service: an objectOverrides entry is refused at admission, a key on
	// the Listener's or claim's own metadata draws a warning and an event.
	TenantMetadataEnforce TenantMetadataMode = "Enforce"
	// TenantMetadataWarn copies such keys as before this rule existed,
	// warns at admission and records the Listener condition
	// TenantMetadataAllowed False: a class to migrate with (docs/migration.md).
	// Exposure and locked keys are the class's in this mode too.
	TenantMetadataWarn TenantMetadataMode = "Warn"
)

// TenantMetadataPolicy is what a class allows tenants to put on the
// metadata of its Services, beyond the built-in allow-list. Each entry is
// an exact key ("team.example.com/owner") or a prefix pattern
// ("example.com/*", which matches every key under that prefix).
type TenantMetadataPolicy struct {
	// Labels are the label keys or patterns tenants may set.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +optional
	Labels []string `json:"labels,omitempty"`

	// Annotations are the annotation keys or patterns tenants may set.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +optional
	Annotations []string `json:"annotations,omitempty"`

	// Mode is Enforce (the default: keys that are not allowed stay off the
	// Service) or Warn (they are copied, with a warning and a condition).
	// +kubebuilder:default=Enforce
	// +optional
	Mode TenantMetadataMode `json:"mode,omitempty"`
}

// EffectiveTenantMetadataMode is the class's mode, Enforce when unset.
func (s *ListenerClassSpec) EffectiveTenantMetadataMode() TenantMetadataMode {
	if s.TenantMetadata == nil || s.TenantMetadata.Mode == "" {
		return TenantMetadataEnforce
	}
	return s.TenantMetadata.Mode
}

// PinnedNodeRelease says when the operator releases a listener volume from
// the node it is pinned to.
// +kubebuilder:validation:Enum=NodeDeleted;NodeNotReady;Never
type PinnedNodeRelease string

const (
	// PinnedNodeReleaseNodeDeleted releases the volume once its node's Node
	// object is deleted (the default).
	PinnedNodeReleaseNodeDeleted PinnedNodeRelease = "NodeDeleted"
	// PinnedNodeReleaseNodeNotReady also releases it once its node has not
	// been Ready for notReadyTimeout.
	PinnedNodeReleaseNodeNotReady PinnedNodeRelease = "NodeNotReady"
	// PinnedNodeReleaseNever never releases it: the operator only explains
	// (events, Listener condition, metric) how to release it by hand.
	PinnedNodeReleaseNever PinnedNodeRelease = "Never"
)

// DefaultNotReadyTimeout is how long a node must not be Ready before
// release: NodeNotReady releases volumes pinned to it, when the class does
// not say.
const DefaultNotReadyTimeout = 10 * time.Minute

// PinnedNodeLoss is the recovery policy for listener volumes pinned to a
// node that is gone. Releasing deletes the listener claim (never any other
// claim) after handing its Listener over to the claim recreated under the
// same name, and deletes the pod's Pending replacement that still requires
// the lost node, so that its controller recreates both and the new volume
// is pinned to the node the pod now lands on. The Listener keeps its name,
// Service and node ports; only the node address changes.
// +kubebuilder:validation:XValidation:rule="!has(self.notReadyTimeout) || self.release == 'NodeNotReady'",message="notReadyTimeout only applies to release: NodeNotReady"
type PinnedNodeLoss struct {
	// Release says when a pinned volume is released: NodeDeleted (when the
	// Node object is deleted), NodeNotReady (also when the node has not been
	// Ready for notReadyTimeout) or Never.
	// +kubebuilder:default=NodeDeleted
	// +optional
	Release PinnedNodeRelease `json:"release,omitempty"`

	// NotReadyTimeout is how long a node must not be Ready before release:
	// NodeNotReady releases the volumes pinned to it (default 10m).
	// +optional
	NotReadyTimeout *metav1.Duration `json:"notReadyTimeout,omitempty"`
}

// EffectivePinnedNodeLoss resolves an unset policy and its defaults: the
// release mode and, for NodeNotReady, the timeout (0 otherwise).
func (s *ListenerClassSpec) EffectivePinnedNodeLoss() (PinnedNodeRelease, time.Duration) {
	if s.PinnedNodeLoss == nil || s.PinnedNodeLoss.Release == "" {
		return PinnedNodeReleaseNodeDeleted, 0
	}
	if s.PinnedNodeLoss.Release != PinnedNodeReleaseNodeNotReady {
		return s.PinnedNodeLoss.Release, 0
	}
	if t := s.PinnedNodeLoss.NotReadyTimeout; t != nil && t.Duration > 0 {
		return PinnedNodeReleaseNodeNotReady, t.Duration
	}
	return PinnedNodeReleaseNodeNotReady, DefaultNotReadyTimeout
}

// EffectiveAddressType resolves HostnameConservative (and an unset
// preference) to the concrete preference for this class's service type.
func (s *ListenerClassSpec) EffectiveAddressType() AddressType {
	switch s.PreferredAddressType {
	case PreferredAddressIP:
		return AddressTypeIP
	case PreferredAddressHostname:
		return AddressTypeHostname
	default:
		if s.ServiceType == ServiceTypeNodePort {
			return AddressTypeIP
		}
		return AddressTypeHostname
	}
}

// IsPinned reports whether volumes of this class are pinned to a node.
func (s *ListenerClassSpec) IsPinned() bool {
	return s.ServiceType == ServiceTypeNodePort && s.PinnedNodePorts != nil && *s.PinnedNodePorts
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=lc
// +kubebuilder:printcolumn:name="Service Type",type=string,JSONPath=`.spec.serviceType`
// +kubebuilder:printcolumn:name="Pinned",type=boolean,JSONPath=`.spec.pinnedNodePorts`
// +kubebuilder:printcolumn:name="Address Type",type=string,JSONPath=`.spec.preferredAddressType`,priority=1
// +kubebuilder:printcolumn:name="Release Pinned",type=string,JSONPath=`.spec.pinnedNodeLoss.release`,priority=1
// +kubebuilder:printcolumn:name="Locked",type=string,JSONPath=`.spec.lockedServiceFields`,priority=1
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname.template`,priority=1
// +kubebuilder:printcolumn:name="Tenant Labels",type=string,JSONPath=`.spec.tenantMetadata.labels`,priority=1
// +kubebuilder:printcolumn:name="Tenant Annotations",type=string,JSONPath=`.spec.tenantMetadata.annotations`,priority=1
// +kubebuilder:printcolumn:name="Tenant Mode",type=string,JSONPath=`.spec.tenantMetadata.mode`,priority=1
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.certificate.issuerRef.name`,priority=1
// +kubebuilder:printcolumn:name="Sticky Node Ports",type=boolean,JSONPath=`.spec.stickyNodePorts`,priority=1
// +kubebuilder:printcolumn:name="Node Port Range",type=string,JSONPath=`.spec.nodePortRange`,priority=1
// +kubebuilder:printcolumn:name="Shared Ports",type=string,JSONPath=`.spec.loadBalancerSharing`,priority=1
// +kubebuilder:printcolumn:name="Node Address",type=string,JSONPath=`.spec.nodeAddress`,priority=1
// +kubebuilder:printcolumn:name="IP Families",type=string,JSONPath=`.spec.ipFamilies`,priority=1
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.spec.gateway.parentRefs[*].name`,priority=1
// +kubebuilder:printcolumn:name="Restart Pods",type=boolean,JSONPath=`.spec.addressChange.restartPods`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ListenerClass is a cluster-wide policy for exposing Listeners.
type ListenerClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ListenerClassSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ListenerClassList is a list of ListenerClasses.
type ListenerClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ListenerClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ListenerClass{}, &ListenerClassList{})
}
