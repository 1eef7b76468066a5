package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ListenerPort is one port that a Listener exposes.
type ListenerPort struct {
	// Name identifies the port; pods read its public number from
	// default-address/ports/<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Port is the port number the pods listen on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`

	// Protocol is the port's protocol.
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +kubebuilder:default=TCP
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// ListenerSpec is what one workload exposes.
type ListenerSpec struct {
	// ClassName is the ListenerClass that decides how this Listener is exposed.
	// +optional
	ClassName *string `json:"className,omitempty"`

	// ExtraPodSelectorLabels are added to the Service selector, next to the
	// per-Listener label that listener volumes put on their pods.
	// +optional
	ExtraPodSelectorLabels map[string]string `json:"extraPodSelectorLabels,omitempty"`

	// Ports are the ports to expose, unique by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Ports []ListenerPort `json:"ports,omitempty"`

	// PublishNotReadyAddresses publishes pods that are not ready yet, so that
	// peers can find each other while they bootstrap.
	// +kubebuilder:default=true
	// +optional
	PublishNotReadyAddresses *bool `json:"publishNotReadyAddresses,omitempty"`

	// ObjectOverrides are partial objects merged over the generated ones
	// (matched by apiVersion, kind, name and namespace), last of all. At
	// most 32: a Listener generates one Service, so a few are all any
	// workload needs, and the bound caps the work one tenant's object costs.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ObjectOverrides []runtime.RawExtension `json:"objectOverrides,omitempty"`
}

// AddressType is the kind of a published address.
// +kubebuilder:validation:Enum=Hostname;IP
type AddressType string

const (
	AddressTypeHostname AddressType = "Hostname"
	AddressTypeIP       AddressType = "IP"
)

// ListenerIngress is one address a Listener (or a pod) is reachable on.
type ListenerIngress struct {
	// Address is an IP address or a DNS name.
	Address string `json:"address"`

	// AddressType says whether Address is an IP or a hostname.
	AddressType AddressType `json:"addressType"`

	// Ports maps port names to the port numbers reachable on this address.
	// +optional
	Ports map[string]int32 `json:"ports,omitempty"`
}

// ListenerStatus is what the operator publishes about a Listener.
type ListenerStatus struct {
	// ServiceName is the Service that backs this Listener.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ServiceType is the type of that Service (from the Listener's class).
	// +optional
	ServiceType ServiceType `json:"serviceType,omitempty"`

	// ClassName is the ListenerClass the Service in serviceName was last
	// made from. It differs from spec.className while the class named there
	// is missing (the Service stays as it was made), and the ListenerClass
	// deletion guard counts the Listener as a user of it.
	// +optional
	ClassName string `json:"className,omitempty"`

	// IngressAddresses are all addresses the Listener is reachable on.
	// +optional
	IngressAddresses []ListenerIngress `json:"ingressAddresses,omitempty"`

	// NodePorts maps port names to node ports, for NodePort and
	// LoadBalancer Services.
	// +optional
	NodePorts map[string]int32 `json:"nodePorts,omitempty"`

	// IPFamilies are the IP families of that Service, in its order: a
	// NodePort Listener's pods are told their node's address of each (a
	// node port answers only on its Service's families).
	// +listType=atomic
	// +optional
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`

	// CertificateSecretName is the Secret of the cert-manager Certificate
	// that names this Listener's addresses, when its class asks for one
	// (spec.certificate). Pods mount it to serve TLS for those addresses.
	// +optional
	CertificateSecretName string `json:"certificateSecretName,omitempty"`

	// Conditions report whether the Listener is served ("Ready"), how its
	// class's features fared ("NodePortsKept", "NodePortsInRange", "LoadBalancerShared",
	// "HostnamePublished", "TenantMetadataAllowed", "CertificateManaged"),
	// whether the nodes its volumes are pinned to are there
	// ("PinnedNodesAvailable"), and whether the operator's last write of a
	// claim's own Listener was accepted ("ClaimApplied"). Each type has one
	// writer (statusowners.go).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lis
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.className`
// +kubebuilder:printcolumn:name="Service Type",type=string,JSONPath=`.status.serviceType`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.ingressAddresses[0].address`
// +kubebuilder:printcolumn:name="Ports",type=string,JSONPath=`.status.ingressAddresses[0].ports`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Listener exposes a set of pods according to a ListenerClass and publishes
// the addresses they are reachable on.
type Listener struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ListenerSpec   `json:"spec,omitempty"`
	Status ListenerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ListenerList is a list of Listeners.
type ListenerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Listener `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Listener{}, &ListenerList{})
}

// EffectivePublishNotReadyAddresses is spec.publishNotReadyAddresses, true
// when unset (the Stackable CRD's default): the Service's field and which
// pods' nodes a NodePort Listener publishes both follow it.
func (s *ListenerSpec) EffectivePublishNotReadyAddresses() bool {
	return s.PublishNotReadyAddresses == nil || *s.PublishNotReadyAddresses
}
