package v1alpha1

// PodReadinessPolicy is ListenerClass spec.podReadiness.
type PodReadinessPolicy string

const (
	// PodReadinessGate: pods of the class carry the readiness gate
	// PodConditionAddressesReady and are Ready only when it is True.
	PodReadinessGate PodReadinessPolicy = "Gate"
	// PodReadinessNone: no gate (the default, and Stackable's behaviour).
	PodReadinessNone PodReadinessPolicy = "None"
)

// GatesPods reports whether pods of the class get the readiness gate.
func (s *ListenerClassSpec) GatesPods() bool {
	return s.PodReadiness != nil && *s.PodReadiness == PodReadinessGate
}

// The readiness gate on pods of classes with spec.podReadiness Gate.
const (
	// PodConditionAddressesReady is the pod condition (and readiness gate)
	// the operator sets True when every listener volume of the pod is
	// reachable at the addresses the pod was told, False with a reason
	// below otherwise (api/podready).
	PodConditionAddressesReady = "listeners.stackable.tech/addresses-ready"

	ReasonAddressesReady = "AddressesReady"
	// ReasonListenerMissing: the volume's Listener does not exist (yet).
	ReasonListenerMissing = "ListenerMissing"
	// ReasonListenerNotReady: the Listener is not Ready for its current
	// generation (no Service, no load-balancer address, a route not
	// accepted: its Ready condition says which).
	ReasonListenerNotReady = "ListenerNotReady"
	// ReasonAddressesPending: the operator cannot tell the pod its
	// addresses yet (addresses.ForPod waits).
	ReasonAddressesPending = "AddressesPending"
	// ReasonAddressesNotRecorded: the pod's PodListeners does not hold
	// the addresses the pod is told (yet).
	ReasonAddressesNotRecorded = "AddressesNotRecorded"
	// ReasonAddressesChanged: the addresses the pod started with are no
	// longer its addresses; it advertises ones that do not reach it.
	ReasonAddressesChanged = "AddressesChanged"
	// ReasonHostnameNotPublished: the class publishes a DNS name and the
	// Listener's HostnamePublished is not True.
	ReasonHostnameNotPublished = "HostnameNotPublished"
	// ReasonCertificateNotReady: the class asks for a certificate and the
	// Listener's Certificate is missing or not Ready.
	ReasonCertificateNotReady = "CertificateNotReady"
	// ReasonCertificateStale: the Listener's Certificate is Ready but does
	// not name every address the pod was told.
	ReasonCertificateStale = "CertificateStale"
)
