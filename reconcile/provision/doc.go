// Package provision makes the volume of a listener claim as soon as it can
// be made, on the leader, instead of waiting for the scheduler and
// csi-provisioner.
//
// A listener volume is only a pointer to a Listener: nothing is created
// outside Kubernetes. Through csi-provisioner a claim of the listener
// storage class (which binds on first consumer, so that a pinned class can
// pin the volume to the pod's node) waits for the scheduler to try its pod,
// write the selected node on the claim, then for csi-provisioner to call
// CreateVolume and create the PersistentVolume, then for the PV controller
// to bind them: most of the time a pod with a listener volume waits before
// it starts (docs/benchmarks.md, "Time to address on the real nodes").
//
// This controller creates the same PersistentVolume (api/volumes: the same
// name, so csi-provisioner and it never make two) already bound to the
// claim (spec.claimRef with its UID):
//
//   - for a class that does not pin volumes, as soon as the claim exists:
//     the PV controller binds a claim to a volume bound to it without
//     waiting for a consumer, and the scheduler then finds the pod's claim
//     bound;
//   - for a class that pins volumes to a node, once the scheduler has
//     written the node it picked on the claim (and that node runs this
//     driver's node plugin), with that node's affinity.
//
// It does not complete the binding on the claim itself (spec.volumeName
// and pv.kubernetes.io/bind-completed): the PV controller takes a claim
// with that annotation whose volume its own cache does not hold yet for a
// claim that lost its volume (phase Lost), and nothing outside it can know
// when its cache holds a new volume. So the operator writes no claim, and
// the PV controller's binding stays the one Kubernetes makes.
//
// csi-provisioner stays: it deletes released volumes (they carry its
// pv.kubernetes.io/provisioned-by annotation) and provisions what this
// controller did not (it is switched off, or the leader is away).
//
// The package is set up by the registry (reconcile.Controllers, when
// --provision-volumes is on). It imports api/ for the
// rules (api/claims: which Listener a claim uses; api/volumes: the volume);
// never webhooks/ or csi/.
package provision
