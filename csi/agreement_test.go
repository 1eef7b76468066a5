package csi

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestAgreement asks CreateVolume, as csi-provisioner does, which Listener
// the volume of each unbound claim of the agreement table publishes (and
// whether it is the claim's own), and the node plugin the same for the
// bound ones, as for a volume provisioned some other way (no volume
// context). The driver is only asked about claims of its storage class.
func TestAgreement(t *testing.T) {
	agreement.Check(t, "the CSI driver", agreement.AskListener|agreement.AskOwn, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		pvc := s.StoredClaim()
		if !claims.IsListenerStorageClass(pvc.Spec.StorageClassName) {
			return agreement.Answer{}, false
		}
		c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(s.Objects(false)...).Build()
		if s.Volume != nil {
			// Bound: the node plugin resolves a volume that has no volume
			// context (provisioned by the Stackable operator) from its
			// claim.
			node := &nodeServer{reader: c, live: c}
			ref, err := node.volumeRef(t.Context(), s.Volume.Name, nil, pvc.Namespace)
			if status.Code(err) == codes.FailedPrecondition {
				return agreement.Answer{}, true
			}
			if err != nil {
				t.Fatalf("node volumeRef: %v", err)
			}
			return agreement.Answer{Listener: ref.listener.Name, Own: ref.perClaim}, true
		}
		srv := &controllerServer{driver: v1alpha1.DriverName, reader: c, live: c}
		resp, err := srv.CreateVolume(t.Context(), &csi.CreateVolumeRequest{
			Name:                      "pvc-1",
			VolumeCapabilities:        []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}, AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}},
			Parameters:                map[string]string{v1alpha1.ParamPVCName: pvc.Name, v1alpha1.ParamPVCNamespace: pvc.Namespace},
			AccessibilityRequirements: &csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{v1alpha1.TopologyKeyHostname: agreement.Node}}}},
		})
		if status.Code(err) == codes.FailedPrecondition {
			return agreement.Answer{}, true
		}
		if err != nil {
			t.Fatalf("CreateVolume: %v", err)
		}
		vctx := resp.GetVolume().GetVolumeContext()
		got := agreement.Answer{Listener: vctx[volumes.ContextListenerName], Own: vctx[volumes.ContextPerClaim] == "true"}
		return got, true
	})
}
