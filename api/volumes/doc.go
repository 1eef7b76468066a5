// Package volumes says what a listener claim's volume is: its name, the
// volume context that NodePublishVolume reads, the node it is pinned to,
// and the whole PersistentVolume, already bound to its claim.
//
// Two parts make a listener volume: the CSI driver's CreateVolume (package
// csi, called by csi-provisioner) and the operator's own provisioner
// (package reconcile/provision), which makes the same volume without
// waiting for csi-provisioner and the PV controller. Both take the rule
// from here, so a volume is the same whoever made it; the name
// (csi-provisioner's own, "pvc-" and the claim's UID) keeps them from ever
// making two for one claim.
//
// Plain functions of values; nothing here reads or writes the API server.
package volumes
