// Package takeover is the takeover controller: it switches a Service the
// Stackable listener-operator made (reconcile/internal/foreign) from that
// operator's pod selector to this one's, once every pod the old selector
// matches carries the new labels: label first, switch second, so no pod
// drops out of the endpoints.
//
// Contract:
//   - watches Listeners, Services that select by another operator's
//     listener label, and pods that carry one;
//   - writes pod labels (the operator's selector labels and the
//     listener-volume label, a merge patch) and the Service's selector (a
//     JSON patch guarded by the resourceVersion it decided on), under the
//     operator's field manager (v1alpha1.FieldManager);
//   - never writes any other field of a Service, never a label that is not
//     the operator's, and never switches while a pod would drop out.
package takeover
