// Package reconcile is the registry of the operator's controllers, run by
// the leader: Controllers lists every one, and SetupWithManager sets up
// those the options enable, with every cache index (reconcile/internal/lookup)
// registered once, and creates the preset ListenerClasses at start-up
// (presets.go). cmd/ runs the leader through SetupWithManager alone, and
// the tests through the same function (registry_test.go). Each controller
// is a package of its own, with its Setup, its Reconcile and its contract
// in its doc.go:
//
//   - reconcile/listener keeps one Service per Listener and publishes its
//     addresses in the Listener's status;
//   - reconcile/claim gives each listener claim that asks for a class its
//     own Listener, owned by the claim;
//   - reconcile/pod labels pods for their Listeners' Services, keeps each
//     pod's PodListeners and signals address changes (with the relabel scan
//     of what the webhooks missed);
//   - reconcile/takeover switches the Services another operator made to
//     this operator's pod selector, labelling their pods first;
//   - reconcile/certificate keeps a cert-manager Certificate naming each
//     Listener's addresses when its class asks for one;
//   - reconcile/provision makes a listener claim's volume as soon as it can
//     (--provision-volumes);
//   - reconcile/nodeloss releases listener volumes pinned to nodes that
//     are gone (--pinned-node-recovery).
//
// What several controllers need is shared in small packages:
// reconcile/options (every controller's flags and defaults, one Options),
// reconcile/conditions (one condition of a Listener's status), and under
// reconcile/internal the cache indexes and lookups (lookup), metrics, label
// patches (labelpatch), what the Stackable operator made (foreign), the
// rules of a claim's own Listener (claimlistener) and the test harness
// (reconciletest). Controllers never
// import each other; webhooks/, reconcile/ and csi/ never import each other
// either.
//
// Which Listener a claim uses, and which labels a pod needs, are
// api/claims's answers, shared with the webhooks, the CSI driver and node
// loss; the Service a Listener gets is api/service's. The decisions are
// plain functions of values; the reconcilers only read the cache, call them,
// and write when the result differs from what exists.
package reconcile
