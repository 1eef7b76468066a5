package csi

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
)

// volumeRef is what a volume publishes: its Listener, and the claim the
// volume was made for.
type volumeRef struct {
	listener client.ObjectKey
	// perClaim: the Listener is the claim's own (listener-class), not a
	// shared one named by listener-name.
	perClaim bool
	claim    client.ObjectKey
	claimUID types.UID
	// volumeID is also the PersistentVolume's name (csi-provisioner names
	// the volume after the request).
	volumeID string
}

// volume is what the volume records about its Listener, for
// addresses.Publishable.
func (ref volumeRef) volume() addresses.Volume {
	return addresses.Volume{PerClaim: ref.perClaim, Claim: ref.claim, ClaimUID: ref.claimUID, Name: ref.volumeID}
}
