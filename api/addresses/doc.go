// Package addresses decides which addresses a Listener or a pod publishes:
// whether a pod's volume may publish its Listener at all (Publishable),
// which of a node's addresses to use, hostname or IP by the class's
// preference, and a stable order. The reconciler (Listener status,
// PodListeners) and the CSI driver (the pod's address tree) both call it, so a
// pod's files and its Listener's status always agree.
package addresses
