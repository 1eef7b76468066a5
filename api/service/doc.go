// Package service is the one rule that turns a ListenerClass and a
// Listener into the Service the operator applies, and the policy that keeps
// a Listener (written by a tenant) from widening what its class (written by
// an administrator) exposes.
//
// Merge order, lowest to highest: the generated Service and the class's
// serviceAnnotations, the class's serviceOverrides, the Listener's matching
// objectOverrides — the Stackable listener-operator's precedence. Every
// override is read by one strict decoder (Decode): keys are case-sensitive,
// duplicate, case-folded and unknown keys are refused, and so are values of
// the wrong type; nothing is skipped. The policy is then checked on the
// final Service, not on the override text: every exposure field (see
// SpecFields, MetadataFields and ExposureAnnotations) and every field the
// class locks (spec.lockedServiceFields) is what the class made, whatever
// the overrides said.
//
// The webhook refuses a Listener whose Result has Refused errors; the
// reconciler applies Result.Service, from which the refused parts are
// already left out, to what got in while the webhook was down.
package service
