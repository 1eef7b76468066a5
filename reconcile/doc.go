// Package reconcile holds the operator's controllers, run by the leader:
//
//   - the Listener controller keeps one Service per Listener (shaped by the
//     Listener's ListenerClass and overrides) and publishes the addresses it
//     is reachable on in the Listener's status;
//   - the claim controller gives each listener PersistentVolumeClaim that
//     asks for a class its own Listener, owned by the claim;
//   - the pod controller labels pods for their Listeners' Services and keeps
//     each pod's PodListeners object;
//   - the takeover controller switches the Services another operator made
//     (the Stackable listener-operator's) to this operator's pod selector,
//     labelling their pods first (takeover.go, adopt.go);
//   - the certificate controller keeps a cert-manager Certificate naming
//     each Listener's addresses when its class asks for one
//     (certificate.go);
//   - a start-up task creates the preset ListenerClasses.
//
// The address features of a class (docs/reconcile.md) hook into these:
// DNS hostnames (hostname.go), the address-change signal on pods
// (addresschange.go) and sticky node ports (nodeports.go).
//
// Which Listener a claim uses, and which labels a pod needs, are
// api/claims's answers, shared with the webhooks, the CSI driver and node
// loss. The decisions (which Service, which addresses, which ports) are plain
// functions of values; the reconcilers only read the cache, call them, and
// write when the result differs from what exists. A reconcile of a Listener
// ends in an outcome (outcome.go): the status to publish, its verdict, and
// when to look again. Each writer of a Listener's status applies only its
// own fields under its own field manager (statuswrite.go).
package reconcile
