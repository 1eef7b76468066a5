package csi

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/caches"
)

// controllerServer provisions listener volumes. A volume is only a pointer
// to a Listener, so nothing is stored: the volume id is the request name and
// everything NodePublishVolume needs travels in the volume context.
type controllerServer struct {
	csi.UnimplementedControllerServer
	driver string
	reader client.Reader
	live   client.Reader
}

var _ csi.ControllerServer = (*controllerServer)(nil)

// ControllerGetCapabilities offers only CREATE_DELETE_VOLUME: there is
// nothing to attach, expand, snapshot or list.
func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{
			Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		}},
	}}}, nil
}

// CreateVolume resolves the claim's ListenerClass and, for a pinned class,
// pins the volume to the node the scheduler picked.
func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume name is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return nil, err
		}
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "listener volumes cannot be created from a snapshot or another volume")
	}
	params := req.GetParameters()
	claimKey := client.ObjectKey{Namespace: params[v1alpha1.ParamPVCNamespace], Name: params[v1alpha1.ParamPVCName]}
	if claimKey.Name == "" || claimKey.Namespace == "" {
		return nil, status.Errorf(codes.InvalidArgument,
			"parameters %s and %s are required: run csi-provisioner with --extra-create-metadata",
			v1alpha1.ParamPVCName, v1alpha1.ParamPVCNamespace)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := s.live.Get(ctx, claimKey, claim); err != nil {
		return nil, apiError(ctx, err, codes.NotFound, fmt.Sprintf("PersistentVolumeClaim %s", claimKey))
	}
	ref, err := listenerOfClaim(claim, nil)
	if err != nil {
		return nil, err
	}
	var shared *v1alpha1.Listener
	key := client.ObjectKey{Namespace: claim.Namespace, Name: ref.Listener}
	if !ref.Own {
		// Read live: the controller watches no Listeners (it is asked
		// rarely, and a watch would hold every Listener of the cluster).
		shared = &v1alpha1.Listener{}
		if err := s.live.Get(ctx, key, shared); err != nil {
			return nil, apiError(ctx, err, codes.NotFound, fmt.Sprintf("listener %s (named by claim %s)", key, claimKey))
		}
	}
	className := volumes.ClassName(ref, shared)
	if className == "" {
		return nil, status.Errorf(codes.FailedPrecondition, "listener %s (named by claim %s) has no spec.className", key, claimKey)
	}
	class := &v1alpha1.ListenerClass{}
	if err := s.reader.Get(ctx, client.ObjectKey{Name: className}, class); err != nil {
		return nil, apiError(ctx, err, codes.NotFound, fmt.Sprintf("ListenerClass %q (used by claim %s)", className, claimKey))
	}

	vol := &csi.Volume{
		VolumeId:      req.GetName(),
		CapacityBytes: 0,
		VolumeContext: volumes.Context(claim, ref),
	}
	if class.Spec.IsPinned() {
		node, err := selectedNode(req.GetAccessibilityRequirements())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ListenerClass %q pins volumes to a node, but %v: the StorageClass needs volumeBindingMode: WaitForFirstConsumer (and csi-provisioner its Topology feature, on by default)", className, err)
		}
		vol.AccessibleTopology = []*csi.Topology{{Segments: volumes.Topology(node)}}
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

// selectedNode is the node the scheduler picked for the pod: with delayed
// binding csi-provisioner puts it first among the preferred topologies.
func selectedNode(req *csi.TopologyRequirement) (string, error) {
	for _, list := range [][]*csi.Topology{req.GetPreferred(), req.GetRequisite()} {
		for _, t := range list {
			if node := t.GetSegments()[v1alpha1.TopologyKeyHostname]; node != "" {
				return node, nil
			}
		}
	}
	return "", fmt.Errorf("the request names no node (topology key %s)", v1alpha1.TopologyKeyHostname)
}

// DeleteVolume has nothing to clean up: the Listener of a claim belongs to
// the claim (garbage-collected with it) and publishing leaves nothing behind
// outside the pod's volume directory.
func (s *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms mount capabilities of a volume that
// exists: a PersistentVolume of this driver with the volume id as its
// volume handle.
func (s *controllerServer) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	if err := s.volumeExists(ctx, id); err != nil {
		return nil, err
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// volumeExists looks for the PersistentVolume of volume id, from the API
// server: by name first (csi-provisioner names the volume after the
// request, as the id is), then among the listener volumes (marked once
// bound), a page at a time, by volume handle (volumes created by hand).
// Nothing calls ValidateVolumeCapabilities in a cluster's normal work, so
// no cache of every volume is kept for it.
func (s *controllerServer) volumeExists(ctx context.Context, id string) error {
	pv := &corev1.PersistentVolume{}
	err := s.live.Get(ctx, client.ObjectKey{Name: id}, pv)
	switch {
	case err == nil && s.isVolume(pv, id):
		return nil
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err):
		return apiError(ctx, err, codes.NotFound, fmt.Sprintf("volume %s", id))
	}
	opts := &client.ListOptions{LabelSelector: caches.Marked(), Limit: volumePage}
	for {
		list := &corev1.PersistentVolumeList{}
		if err := s.live.List(ctx, list, opts); err != nil {
			return apiError(ctx, err, codes.NotFound, fmt.Sprintf("volume %s", id))
		}
		for i := range list.Items {
			if s.isVolume(&list.Items[i], id) {
				return nil
			}
		}
		if list.Continue == "" {
			return status.Errorf(codes.NotFound, "volume %s not found: no PersistentVolume of driver %s has that volume handle", id, s.driver)
		}
		opts.Continue = list.Continue
	}
}

// volumePage is how many volumes volumeExists reads at a time.
const volumePage = 500

// isVolume reports whether pv is the volume id of this driver.
func (s *controllerServer) isVolume(pv *corev1.PersistentVolume, id string) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == s.driver && pv.Spec.CSI.VolumeHandle == id
}
