package v1alpha1

import "fmt"

// LoadBalancerSharing gives the Listeners of one workload one load-balancer
// IP, each on ports of its own (docs/reconcile.md, "Shared load
// balancers"): the operator sets one sharing key per workload on their
// Services (MetalLB's and Cilium LB-IPAM's annotations), and gives replica
// i the Service ports from + i×n + j for its port j (n ports a replica, the
// rule of nodePortRange); a Listener the StatefulSet's pods share (a
// bootstrap) takes the last free block of the range. Only for serviceType
// LoadBalancer with externalTrafficPolicy Cluster (MetalLB shares an IP
// only between such Services).
// +kubebuilder:validation:XValidation:rule="self.from <= self.to",message="from must not be greater than to"
type LoadBalancerSharing struct {
	// From is the first Service port of the range.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	From int32 `json:"from"`
	// To is the last Service port of the range (inclusive).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	To int32 `json:"to"`
}

// Size is how many ports the range holds.
func (r LoadBalancerSharing) Size() int { return int(r.To) - int(r.From) + 1 }

// Contains reports whether port p is in the range.
func (r LoadBalancerSharing) Contains(p int32) bool { return p >= r.From && p <= r.To }

func (r LoadBalancerSharing) String() string { return fmt.Sprintf("%d-%d", r.From, r.To) }

// The annotations that make load balancers give Services one IP. The
// operator alone sets them on the Services of a sharing class; a class may
// not set them itself (they are exposure keys of the allow-list too).
const (
	// AnnotationMetalLBSharedIP is MetalLB's sharing key: Services of one
	// namespace with the same value, disjoint ports and
	// externalTrafficPolicy Cluster get one IP.
	AnnotationMetalLBSharedIP = "metallb.io/allow-shared-ip"
	// AnnotationCiliumSharingKey is Cilium LB-IPAM's sharing key (one
	// namespace, unless lbipam.cilium.io/sharing-cross-namespace, which
	// the operator never sets).
	AnnotationCiliumSharingKey = "lbipam.cilium.io/sharing-key"
)

// Condition and reasons of shared load balancers.
const (
	// ConditionLoadBalancerShared says whether a Listener of a sharing
	// class shares its workload's load-balancer IP (only for such classes).
	ConditionLoadBalancerShared = "LoadBalancerShared"

	// ReasonShared: the Service has the IP every Service of its sharing key
	// has (or is the first of its key to get one).
	ReasonShared = "Shared"
	// ReasonAwaitingSharedIP: the load balancer has not given the Service
	// an address yet.
	ReasonAwaitingSharedIP = "AwaitingAddress"
	// ReasonSharingRefused: the Service got another IP than the Services
	// of its key: the load balancer does not share (it does not read the
	// key, or the ports clash, or the pool forbids it).
	ReasonSharingRefused = "SharingRefused"
	// ReasonSharedPortsExhausted: the range has no room for the Listener's
	// ports (also the Ready reason: no Service is made).
	ReasonSharedPortsExhausted = "SharedPortsExhausted"
	// ReasonSharedPortTaken: a port the formula gives the Listener is held
	// by another Service of its key (also the Ready reason).
	ReasonSharedPortTaken = "SharedPortTaken"
	// ReasonAwaitingWorkload: no pod of a StatefulSet mounts the Listener
	// yet, so its sharing key is unknown (also the Ready reason).
	ReasonAwaitingWorkload = "AwaitingWorkload"
)
