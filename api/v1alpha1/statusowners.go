package v1alpha1

// Four controllers write a Listener's status, each its own part, with a
// server-side apply under a field manager of its own, so that none
// overwrites another's fields or has to retry on another's write. The
// table below says which part is whose; the writers derive what they own
// from it (reconcile/conditions), and a condition they are not given here
// is refused.

// StatusWriter is a controller that writes part of a Listener's status
// (its name in metrics and logs).
type StatusWriter string

// The writers of a Listener's status.
const (
	// ListenerStatusWriter is the Listener controller (reconcile/listener).
	ListenerStatusWriter StatusWriter = "listener"
	// CertificateStatusWriter is the certificate controller
	// (reconcile/certificate).
	CertificateStatusWriter StatusWriter = "listener-certificate"
	// NodeLossStatusWriter is the node-loss controller (reconcile/nodeloss).
	NodeLossStatusWriter StatusWriter = "pinned-node-loss"
	// ClaimStatusWriter is the claim controller (reconcile/claim), which
	// says when the API server refused its write of a claim's own Listener.
	ClaimStatusWriter StatusWriter = "listener-claim"
)

// FieldManager is the field manager w applies its part of the status
// under ("" for a controller that writes none).
func (w StatusWriter) FieldManager() string {
	switch w {
	case ListenerStatusWriter:
		return FieldManager
	case CertificateStatusWriter:
		return FieldManager + "-certificate"
	case NodeLossStatusWriter:
		return FieldManager + "-node-loss"
	case ClaimStatusWriter:
		return FieldManager + "-claim"
	}
	return ""
}

// statusPart is one row of the table: a condition type or a status field
// (its JSON name) and its writer.
type statusPart struct {
	condition, field string
	writer           StatusWriter
}

// statusOwners is the table: every condition type and every status field
// of a Listener, and the controller that writes it.
func statusOwners() []statusPart {
	return []statusPart{
		{condition: ConditionReady, writer: ListenerStatusWriter},
		{condition: ConditionNodePortsKept, writer: ListenerStatusWriter},
		{condition: ConditionNodePortsInRange, writer: ListenerStatusWriter},
		{condition: ConditionLoadBalancerShared, writer: ListenerStatusWriter},
		{condition: ConditionHostnamePublished, writer: ListenerStatusWriter},
		{condition: ConditionTenantMetadataAllowed, writer: ListenerStatusWriter},
		{condition: ConditionCertificateManaged, writer: CertificateStatusWriter},
		{condition: ConditionPinnedNodesAvailable, writer: NodeLossStatusWriter},
		{condition: ConditionClaimApplied, writer: ClaimStatusWriter},
		{field: "serviceName", writer: ListenerStatusWriter},
		{field: "serviceType", writer: ListenerStatusWriter},
		{field: "className", writer: ListenerStatusWriter},
		{field: "ingressAddresses", writer: ListenerStatusWriter},
		{field: "nodePorts", writer: ListenerStatusWriter},
		{field: "ipFamilies", writer: ListenerStatusWriter},
		{field: "certificateSecretName", writer: ListenerStatusWriter},
	}
}

// ConditionWriter is the writer of a Listener's conditions of type typ;
// false for a type no controller writes.
func ConditionWriter(typ string) (StatusWriter, bool) {
	for _, p := range statusOwners() {
		if p.condition == typ && typ != "" {
			return p.writer, true
		}
	}
	return "", false
}

// StatusFieldWriter is the writer of the Listener status field of JSON
// name field (conditions: ConditionWriter); false for a field no
// controller writes.
func StatusFieldWriter(field string) (StatusWriter, bool) {
	for _, p := range statusOwners() {
		if p.field == field && field != "" {
			return p.writer, true
		}
	}
	return "", false
}

// StatusConditionTypes are the condition types of the table, in its order.
func StatusConditionTypes() []string {
	var out []string
	for _, p := range statusOwners() {
		if p.condition != "" {
			out = append(out, p.condition)
		}
	}
	return out
}
