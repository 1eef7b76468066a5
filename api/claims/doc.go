// Package claims holds the listener-claim rules, once: which
// PersistentVolumeClaims (and claim templates) are listener claims, which
// Listener a claim uses and whether it is the claim's own, the class it
// names, which labels a pod with listener volumes carries, which nodes a
// pod is pinned to, and what the webhooks inject into a claim template.
//
// The pod and claim webhooks, the reconcilers (claim, pod, relabel,
// takeover), the CSI driver and node loss all ask this package; none of
// them reads the listener annotations or the storage class to decide what a
// claim is (a test in this package checks the tree for that). The functions
// are pure: values in, values out.
//
// Two questions are told apart:
//
//   - Requested: does a claim, or a template a claim will be made from, ask
//     for a listener volume (the listener storage class, or a listener
//     annotation)? That is what admission looks at: the claim webhook then
//     fills in the storage class and the default ListenerClass.
//   - IsListenerClaim: is a stored claim a listener claim? Its storage class
//     decides: only then is its volume this driver's to provision.
//
// Of answers which Listener a claim uses: the shared Listener named by a
// non-empty listeners.stackable.tech/listener-name (it wins when both are
// set), else the claim's own Listener, named after the claim, of the class
// a non-empty listeners.stackable.tech/listener-class names. A listener
// claim with neither, or with only an empty listener-class (admission
// refuses both; such a claim got in while the webhooks were down), uses no
// Listener: the reconciler makes none and records why on the claim, and
// the CSI driver refuses its volume with FailedPrecondition (Use.Problem
// says what to fix). Once bound, a claim's volume keeps the Listener it was
// provisioned for (Bound), whatever its annotations say since.
package claims
