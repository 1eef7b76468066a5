package v1alpha1

// The claim condition on a claim's own Listener (reconcile/claim).
const (
	// ConditionClaimApplied says whether the API server accepted the
	// operator's last write of a claim's own Listener (the ports of the
	// pods that mount the claim, its labels and class). It is False,
	// reason WriteRefused, with the API server's message (an admission
	// webhook's or policy's denial, a quota, the schema) while the write is
	// refused, and the claim gets a Warning event with the same message.
	// Absent otherwise. The claim controller writes it
	// (ClaimStatusWriter in statusowners.go).
	ConditionClaimApplied = "ClaimApplied"

	ReasonWriteRefused = "WriteRefused"
)
