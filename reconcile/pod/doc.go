// Package pod is the pod controller and the relabel scan: it labels pods
// for the Services of their Listeners (when the admission webhook could
// not), keeps each pod's PodListeners (what the pod was told, by
// addresses.ForPod, the rule the CSI driver follows too), signals when
// those addresses change, and sets the readiness gate's condition of pods
// whose class gates them (api/podready is the rule).
//
// Contract:
//   - watches pods with claim-backed volumes, PersistentVolumeClaims,
//     Listeners (their status) and PodListeners (their hashes only,
//     caches.PodListenersHashes);
//   - writes pod labels (a merge patch of the labels missing,
//     reconcile/internal/labelpatch), PodListeners (create, update) and,
//     when a class asks for restarts, pod evictions, and the condition
//     listeners.stackable.tech/addresses-ready of gated pods (pods/status,
//     only when it changes), all under the
//     operator's field manager (v1alpha1.FieldManager); the relabel scan
//     (relabel.go, claimmark.go) also marks listener claims the claim
//     webhook missed;
//   - never writes a Listener or its Service, and never deletes a pod
//     (evictions respect PodDisruptionBudgets).
package pod
