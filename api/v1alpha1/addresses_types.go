package v1alpha1

// Types of the address features of issue 25: certificates that name a
// Listener's addresses, the address-change signal, DNS hostnames and
// sticky node ports. Every field that uses them is optional: classes and
// Listeners written for the Stackable operator keep their meaning.

// IssuerKind is the kind of a cert-manager issuer.
// +kubebuilder:validation:Enum=ClusterIssuer;Issuer
type IssuerKind string

const (
	// IssuerKindClusterIssuer is a cluster-scoped cert-manager ClusterIssuer.
	IssuerKindClusterIssuer IssuerKind = "ClusterIssuer"
	// IssuerKindIssuer is a namespaced cert-manager Issuer, looked up (by
	// cert-manager, as for any Certificate) in the Listener's namespace.
	IssuerKindIssuer IssuerKind = "Issuer"
)

// ListenerCertificate asks for a cert-manager Certificate per Listener whose
// dnsNames and ipAddresses are exactly the Listener's current addresses plus
// the in-cluster DNS names of its Service. It is on the class only: the
// cluster admin picks the issuer, a tenant cannot point the operator at one.
type ListenerCertificate struct {
	// IssuerRef names the cert-manager issuer that signs the certificates.
	// +required
	IssuerRef ListenerCertificateIssuer `json:"issuerRef"`
}

// ListenerCertificateIssuer names a cert-manager issuer.
type ListenerCertificateIssuer struct {
	// Kind is ClusterIssuer (cluster-scoped) or Issuer (an Issuer of this
	// name in each Listener's own namespace).
	// +kubebuilder:default=ClusterIssuer
	// +optional
	Kind IssuerKind `json:"kind,omitempty"`

	// Name is the issuer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// AddressChangePolicy says what the operator does when the addresses a
// running pod would read from its listener volume differ from those it was
// given when it started. It always records both in the pod's PodListeners
// and tells the pod by an event.
type AddressChangePolicy struct {
	// RestartPods evicts such pods (through the Eviction API, so
	// PodDisruptionBudgets are respected) so that their controller
	// recreates them reading the new addresses. Off by default.
	// +kubebuilder:default=false
	// +optional
	RestartPods *bool `json:"restartPods,omitempty"`
}

// HostnamePolicy publishes a DNS name for each Listener of the class: the
// Service gets the external-dns annotation
// (external-dns.alpha.kubernetes.io/hostname) and the name is published
// first among the Listener's addresses (addressType Hostname), in its
// status, its pods' PodListeners and their volumes.
type HostnamePolicy struct {
	// Template makes the hostname. Placeholders: {listener} (the Listener's
	// name; a per-replica Listener is named after its claim, so it differs
	// per replica) and {namespace}. The result must be a DNS-1123
	// subdomain of at most 253 characters whose labels are at most 63. It
	// must give each Listener a name of its own: {listener} occurs, and no
	// DNS label (text between two dots) holds both {listener} and
	// {namespace}; other text may share their labels (see allowAmbiguous).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Template string `json:"template"`

	// AllowWithoutNamespace accepts a template without {namespace}. Without
	// it, two namespaces could claim one DNS name; say so only when a
	// single namespace uses the class.
	// +kubebuilder:default=false
	// +optional
	AllowWithoutNamespace *bool `json:"allowWithoutNamespace,omitempty"`

	// AllowAmbiguous accepts a template that is not one-to-one: one without
	// {listener}, or where {listener} and {namespace} share a DNS label
	// (e.g. "{listener}-{namespace}", the flattened form a one-level
	// wildcard certificate needs). No separator within a label keeps them
	// apart: either name may contain any text a label may. Two Listeners
	// may then render the same name; the operator publishes it for the
	// first only (the one whose Service carries it already, else the
	// oldest) and reports HostnameConflict on the others. Without it,
	// admission refuses such a template on a new class or a changed
	// template, and warns on a class that keeps one.
	// +kubebuilder:default=false
	// +optional
	AllowAmbiguous *bool `json:"allowAmbiguous,omitempty"`
}

// Names of the address features.
const (
	// AnnotationExternalDNSHostname is the annotation external-dns reads on
	// a Service to publish a DNS record for it.
	AnnotationExternalDNSHostname = "external-dns.alpha.kubernetes.io/hostname"
)

// The node-ports condition on a Listener (sticky node ports).
const (
	// ConditionNodePortsKept says whether a Listener's Service, when it was
	// last created anew, got back the node ports recorded in
	// status.nodePorts (Status True, reason NodePortsKept) or had to take
	// new ones because some were taken by another Service or out of the
	// cluster's range (Status False, reason NodePortsTaken).
	ConditionNodePortsKept = "NodePortsKept"

	ReasonNodePortsKept  = "NodePortsKept"
	ReasonNodePortsTaken = "NodePortsTaken"
)

// The certificate condition on a Listener whose class asks for a
// certificate (spec.certificate).
const (
	// ConditionCertificateManaged says whether the operator keeps the
	// Listener's cert-manager Certificate (Status True, reason
	// CertificateManaged), or why it cannot: cert-manager's CRDs are not
	// installed (reason CertManagerMissing, looked at again every 15 s) or a
	// Certificate of that name belongs to someone else (reason
	// CertificateConflict). Absent when the class asks for no certificate.
	ConditionCertificateManaged = "CertificateManaged"

	ReasonCertificateManaged  = "CertificateManaged"
	ReasonCertManagerMissing  = "CertManagerMissing"
	ReasonCertificateConflict = "CertificateConflict"
)

// The hostname condition on a Listener whose class publishes a hostname
// (spec.hostname).
const (
	// ConditionHostnamePublished says whether the class's hostname template
	// gives this Listener a DNS name (Status True, reason HostnamePublished)
	// or a name too long for DNS (Status False, reason HostnameTooLong: more
	// than 253 characters, or a label of more than 63) or that another
	// Listener publishes first (Status False, reason HostnameConflict),
	// which is then neither published nor annotated. Absent when the class
	// has no spec.hostname.
	ConditionHostnamePublished = "HostnamePublished"

	ReasonHostnamePublished = "HostnamePublished"
	ReasonHostnameTooLong   = "HostnameTooLong"
	// ReasonHostnameConflict: another Listener (of any class) publishes
	// the name this Listener's template renders first (its Service carries
	// it already, or it is older); the name is neither published nor
	// annotated for this one until the other stops publishing it.
	ReasonHostnameConflict = "HostnameConflict"
)

// The tenant-metadata condition on a Listener (ListenerClass
// spec.tenantMetadata, docs/webhooks.md).
const (
	// ConditionTenantMetadataAllowed is False when labels or annotations a
	// tenant wrote (on the Listener, its claim, or in objectOverrides) are
	// not allowed on the Service by the class: left off it (reason
	// MetadataLeftOut, mode Enforce) or copied anyway (reason
	// MetadataNotAllowed, mode Warn). Absent when every key is allowed.
	ConditionTenantMetadataAllowed = "TenantMetadataAllowed"

	ReasonMetadataLeftOut    = "MetadataLeftOut"
	ReasonMetadataNotAllowed = "MetadataNotAllowed"
)

// HasStickyNodePorts reports whether a Listener's recorded node ports are
// requested again when its Service is created anew: NodePort classes, unless
// they opt out with stickyNodePorts: false.
func (s *ListenerClassSpec) HasStickyNodePorts() bool {
	return s.ServiceType == ServiceTypeNodePort && (s.StickyNodePorts == nil || *s.StickyNodePorts)
}
