// Package noderbac holds the RBAC markers of the CSI node plugin, which
// `make manifests` turns into the listener-operator-csi-node ClusterRole
// (config/csi/rbac/node_role.yaml). controller-gen makes one role per set
// of packages, and the node plugin's role is not the controller's
// (listener-operator-csi, from the markers in package csi): a node's token
// must not carry what only provisioning needs.
//
// What each rule is for (package csi):
//
//   - pods get/list/watch: the cache of the pods scheduled to this node
//     (a list and watch with the field selector spec.nodeName=<node>);
//     get for a pod the cache has not seen yet (FallbackReader).
//   - nodes get/list/watch: the cache of this node alone
//     (metadata.name=<node>), for NodePort addresses.
//   - listeners get/list/watch: one watch per Listener that a volume of
//     this node publishes (metadata.name=<name> in its namespace); get
//     when the watch cap is reached or a watch has not synced.
//   - listenerclasses get/list/watch: the classes (cluster-wide policy).
//   - persistentvolumeclaims get, persistentvolumes get: one read each to
//     trace a volume without this driver's volume context (made by the
//     existing Stackable operator, by hand, or by an earlier version).
//
// RBAC cannot restrict list and watch to a field selector, so the token
// can still list and watch every pod and Node of the cluster and every
// Listener and ListenerClass, and get any PersistentVolume and claim by
// name; it can write nothing. `get` by name alone would do for
// correctness (every read names its object), at the price of one API call
// per object per publish, i.e. several per volume every minute
// (requiresRepublish) on every node, instead of watches that cost nothing
// per publish: docs/csi.md.
//
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumes;persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners;listenerclasses,verbs=get;list;watch
package noderbac
