// Package claim is the claim controller: it gives each listener
// PersistentVolumeClaim that asks for a class a Listener of its own, named
// after and controlled by the claim, so that the address lives exactly as
// long as the claim.
//
// Contract:
//   - watches listener claims, the Listeners they own and the pods that
//     mount them (a claim's Listener takes its ports from their
//     containers);
//   - writes the claim's own Listener (create, update of its labels, class
//     and ports, adoption of one handed over or made by the Stackable
//     operator) and, on the claim's bound volume, the listener-volume mark
//     and the Listener it was provisioned for (a label patch), all under the
//     operator's field manager (v1alpha1.FieldManager);
//   - tells the claim (event ListenerRefused) and the Listener (condition
//     ClaimApplied, alone, as v1alpha1.ClaimStatusWriter) when the API server
//     refuses its write of the Listener (reconcile/internal/refused);
//   - never changes which pod a Listener selects by name once made, never
//     moves a bound volume to another Listener, and never takes a Listener
//     another owner controls (it says so by an event instead).
//
// Reconcile (claim.go, with the controller's setup and watches) reads the
// claim, its pods and the Listener of its name, asks decide (decide.go)
// what to do, and carries it out.
package claim
