// Package reconcile holds the operator's controllers, run by the leader:
//
//   - the Listener controller keeps one Service per Listener (shaped by the
//     Listener's ListenerClass and overrides) and publishes the addresses it
//     is reachable on in the Listener's status;
//   - the claim controller gives each listener PersistentVolumeClaim that
//     asks for a class its own Listener, owned by the claim;
//   - the pod controller labels pods for their Listeners' Services and keeps
//     each pod's PodListeners object;
//   - a start-up task creates the preset ListenerClasses.
//
// The decisions (which Service, which addresses, which ports) are plain
// functions of values; the reconcilers only read the cache, call them, and
// write when the result differs from what exists.
package reconcile
