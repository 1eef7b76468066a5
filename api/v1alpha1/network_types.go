package v1alpha1

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Address features for networks that are not flat (docs/reconcile.md,
// "Networks that are not flat"): node ports a firewall can know in
// advance, node addresses that are not the node's own, and both IP
// families. Every field is the class's: a Listener cannot set or override
// any of them.

// NodeAddressSource says where a NodePort class reads the address clients
// reach a node on.
// +kubebuilder:validation:Enum=Status;Annotation
type NodeAddressSource string

const (
	// NodeAddressStatus reads the node's status.addresses: its ExternalIP,
	// else its InternalIP, else its Hostname (by preferredAddressType), as
	// the Stackable operator does. The default.
	NodeAddressStatus NodeAddressSource = "Status"
	// NodeAddressAnnotation reads AnnotationNodeAddress first, for nodes
	// that clients reach through NAT, a second network or a public address
	// the Node object does not list; a node without it (or with no valid
	// entry in it) falls back to NodeAddressStatus.
	NodeAddressAnnotation NodeAddressSource = "Annotation"
)

// AnnotationNodeAddress on a Node is the address clients reach that node
// on, for classes with nodeAddress: Annotation: comma-separated, at most one
// IPv4 address, one IPv6 address and one DNS name ("203.0.113.7",
// "203.0.113.7,2001:db8::7", "node-7.example.com"). An administrator, or a
// tool that knows the NAT mapping, writes it; the chart's admission policy
// refuses it from the nodes themselves (docs/install.md).
const AnnotationNodeAddress = "listeners.stackable.tech/address"

// NodePortRange is a band of node ports that a class's Services take their
// node ports from, so that a firewall can be opened before deploy and a
// rebuilt cluster gets the same ports back.
// +kubebuilder:validation:XValidation:rule="self.from <= self.to",message="from must not be greater than to"
// +kubebuilder:validation:XValidation:rule="!has(self.perNamespace) || self.perNamespace <= self.to - self.from + 1",fieldPath=".perNamespace",message="perNamespace must not exceed the number of ports of the range (to - from + 1): it is the most ports one namespace may hold of it"
type NodePortRange struct {
	// From is the first node port of the range.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	From int32 `json:"from"`
	// To is the last node port of the range (inclusive).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	To int32 `json:"to"`
	// PerNamespace is the most node ports of the range that the Listeners
	// of one namespace may hold together, so that one tenant cannot take a
	// range several namespaces share. Unset: no bound.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PerNamespace *int32 `json:"perNamespace,omitempty"`
}

// Size is how many node ports the range holds.
func (r NodePortRange) Size() int { return int(r.To) - int(r.From) + 1 }

// Contains reports whether port p is in the range.
func (r NodePortRange) Contains(p int32) bool { return p >= r.From && p <= r.To }

// Overlaps reports whether two ranges share a port.
func (r NodePortRange) Overlaps(o NodePortRange) bool { return r.From <= o.To && o.From <= r.To }

func (r NodePortRange) String() string { return fmt.Sprintf("%d-%d", r.From, r.To) }

// EffectiveNodeAddress is the class's node address source, Status when unset.
func (s *ListenerClassSpec) EffectiveNodeAddress() NodeAddressSource {
	if s.NodeAddress == "" {
		return NodeAddressStatus
	}
	return s.NodeAddress
}

// FamilyOrder is the order in which a NodePort Listener of this class
// publishes a node's addresses of several IP families: IPv4 first (clients
// that concatenate host:port read the first), unless the class's ipFamilies
// name IPv6 first.
func (s *ListenerClassSpec) FamilyOrder() []corev1.IPFamily {
	if len(s.IPFamilies) > 0 && s.IPFamilies[0] == corev1.IPv6Protocol {
		return []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	}
	return []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
}

// HasFamilies reports whether the class decides the IP families of its
// Services (ipFamilyPolicy or ipFamilies); otherwise the cluster's default
// applies and a NodePort Listener publishes one node address, as before.
func (s *ListenerClassSpec) HasFamilies() bool {
	return s.IPFamilyPolicy != nil || len(s.IPFamilies) > 0
}

// OrderFamilies returns the families of a Service in the class's order
// (FamilyOrder), leaving out any the Service does not have.
func (s *ListenerClassSpec) OrderFamilies(service []corev1.IPFamily) []corev1.IPFamily {
	var out []corev1.IPFamily
	for _, f := range s.FamilyOrder() {
		if slices.Contains(service, f) {
			out = append(out, f)
		}
	}
	return out
}

// Condition and reasons of node-port ranges.
const (
	// ConditionNodePortsInRange says whether every node port of a
	// Listener's Service lies in its class's spec.nodePortRange (only for
	// classes with a range).
	ConditionNodePortsInRange = "NodePortsInRange"

	ReasonNodePortsInRange = "NodePortsInRange"
	// ReasonNodePortsOutsideRange: the Service existed before its class
	// got the range (or was made with other ports): an existing Service
	// never moves; recreating it moves it into the range.
	ReasonNodePortsOutsideRange = "NodePortsOutsideRange"
	// ReasonNodePortRangeExhausted: the range has no free port left for the
	// Listener (also the Ready reason: no Service is made).
	ReasonNodePortRangeExhausted = "NodePortRangeExhausted"
	// ReasonNodePortShareExceeded: the Listener needs more node ports than
	// its namespace has left of the range's spec.nodePortRange.perNamespace
	// (the Ready reason: no Service is made, or its Service keeps the ports
	// it has).
	ReasonNodePortShareExceeded = "NodePortShareExceeded"

	// EventNodeAddressInvalid: an entry of a node's AnnotationNodeAddress
	// is neither an IP address nor a DNS name, or repeats a family; it is
	// skipped.
	EventNodeAddressInvalid = "NodeAddressInvalid"
)
