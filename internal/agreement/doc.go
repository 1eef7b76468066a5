// Package agreement is the one table of listener-claim and pod shapes that
// every consumer of the claim rules (api/claims) is asked about: the pod
// webhook, the claim reconciler, the pod reconciler and its relabel scan,
// the CSI driver's resolve and node loss. Each consumer's package has an
// agreement test that asks its own entry point (or the exact function it
// calls) about every Shape and hands the answers to Check, which fails when
// they differ from the table's Want, and so when any two consumers differ.
// The table lives here, imported by tests only, so that webhooks/,
// reconcile/ and csi/ need not import each other.
package agreement
