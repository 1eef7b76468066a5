// Package validation holds the rules a ListenerClass, a Listener and a
// listener claim (a PersistentVolumeClaim of the listener storage class) must
// follow beyond what the CRD schema can express.
//
// The functions are pure: they take the object and the facts they need from
// the cluster (which classes exist, whether a Listener exists) as values and
// return a field.ErrorList whose messages say what is wrong and how to fix it.
// The admission webhooks call them to refuse bad objects at `kubectl apply`;
// the reconciler calls the same functions to report a condition on objects
// that got in while the webhooks were unavailable.
package validation
