package v1alpha1

import (
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
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerClass) || self.serviceType == 'LoadBalancer'",message="loadBalancerClass can only be set when serviceType is LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.pinnedNodePorts) || !self.pinnedNodePorts || self.serviceType == 'NodePort'",message="pinnedNodePorts can only be true when serviceType is NodePort"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceExternalTrafficPolicy) || self.serviceType != 'ClusterIP'",message="serviceExternalTrafficPolicy only applies to NodePort and LoadBalancer services"
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

	// ServiceOverrides is a partial Service merged over the generated one,
	// after serviceAnnotations and before a Listener's objectOverrides.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	ServiceOverrides *runtime.RawExtension `json:"serviceOverrides,omitempty"`
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
