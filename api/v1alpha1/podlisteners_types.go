package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodListenerScope says whether a pod's listener addresses depend on the node
// the pod runs on.
// +kubebuilder:validation:Enum=Node;Cluster
type PodListenerScope string

const (
	PodListenerScopeNode    PodListenerScope = "Node"
	PodListenerScopeCluster PodListenerScope = "Cluster"
)

// PodListener is what one listener volume of a pod advertises.
type PodListener struct {
	// Scope is Node for NodePort classes (the address is the pod's node) and
	// Cluster otherwise.
	Scope PodListenerScope `json:"scope"`

	// IngressAddresses are the addresses this pod advertises for the volume.
	// +optional
	IngressAddresses []ListenerIngress `json:"ingressAddresses,omitempty"`

	// AddressesAtStart are the addresses the pod was given when it started,
	// set only while they differ from ingressAddresses (what it would read
	// now): the pod keeps advertising them until it restarts.
	// +optional
	AddressesAtStart []ListenerIngress `json:"addressesAtStart,omitempty"`
}

// PodListenersSpec maps the pod's volume names to what they advertise.
type PodListenersSpec struct {
	// Listeners is keyed by the name of the pod's listener volume.
	// +optional
	Listeners map[string]PodListener `json:"listeners,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=podlis

// PodListeners lists the addresses that one pod advertises, per listener
// volume. It is named pod-<pod uid> and owned by the pod.
type PodListeners struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodListenersSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// PodListenersList is a list of PodListeners.
type PodListenersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodListeners `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PodListeners{}, &PodListenersList{})
}
