// Package v1alpha1 defines the listeners.stackable.tech/v1alpha1 API:
// ListenerClass (cluster policy), Listener (what one workload exposes) and
// PodListeners (what each pod advertises), kept wire-compatible with the
// Stackable listener operator so that existing objects keep working, plus the
// well-known names (annotations, labels, driver and topology keys) that every
// component of the operator agrees on.
//
// +kubebuilder:object:generate=true
// +groupName=listeners.stackable.tech
package v1alpha1
