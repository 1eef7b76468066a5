package csi

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/csi/addresstree"
)

// nodeServer publishes address trees into pods on one node.
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeName string
	reader   client.Reader
	live     client.Reader
	// binder, if set, is told which Listener each published target uses.
	binder VolumeBinder
	// seal mounts a capped tmpfs on every target (see tmpfs.go); off, the
	// tree is written into a plain directory on the node's disk.
	seal bool
	// podsDirs are kubelet's pods directories seen in publish targets:
	// where the stale-mount sweep looks (nothing is swept before kubelet
	// has published a volume here, which it does for every volume after
	// a restart).
	podsDirs podsDirs
	// targets serializes calls on the same target path (kubelet does not
	// overlap them, but a retry racing a slow call must not interleave two
	// symlink swaps); striped so memory stays bounded.
	targets [64]sync.Mutex
}

func (s *nodeServer) lock(target string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(target))
	m := &s.targets[h.Sum32()%uint32(len(s.targets))]
	m.Lock()
	return m.Unlock
}

var _ csi.NodeServer = (*nodeServer)(nil)

// NodeGetInfo names this node and its topology segment, which kubelet
// puts on the Node as a label for pinned volumes' node affinity.
func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             s.nodeName,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{v1alpha1.TopologyKeyHostname: s.nodeName}},
	}, nil
}

// NodeGetCapabilities lists nothing: there is no staging, no stats and no
// expansion for a file tree of addresses.
func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume writes the addresses the pod advertises into the
// target path, atomically; Unavailable while the Listener has none yet.
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (_ *csi.NodePublishVolumeResponse, err error) {
	target := req.GetTargetPath()
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	addrs, listener, err := s.addressesFor(ctx, req.GetVolumeId(), req.GetVolumeContext())
	if err != nil {
		return nil, err
	}
	// Refuse unsafe addresses before touching the disk (Write checks again).
	if err := addresstree.Validate(addrs); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "refusing to publish volume %s: %v", req.GetVolumeId(), err)
	}

	defer s.lock(target)()
	changed, err := s.publish(ctx, target, req.GetReadonly(), addrs)
	if err != nil {
		if errors.Is(err, addresstree.ErrInvalid) {
			return nil, status.Errorf(codes.InvalidArgument, "refusing to publish volume %s: %v", req.GetVolumeId(), err)
		}
		return nil, status.Errorf(codes.Internal, "publish volume %s: %v", req.GetVolumeId(), err)
	}
	if s.binder != nil {
		// The Listener the volume names, whatever else this call read.
		s.binder.Bind(target, listener)
	}
	if changed {
		// Republishes (every minute, requiresRepublish) that change nothing
		// stay quiet; a new or changed tree is worth a line.
		logr.FromContextOrDiscard(ctx).Info("published address tree", "targetPath", target, "defaultAddress", addrs[0].Address)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// addressesFor finds the pod and the Listener of a volume and computes the
// addresses the pod advertises, once the Listener may be published for it;
// and names that Listener.
func (s *nodeServer) addressesFor(ctx context.Context, volumeID string, vctx map[string]string) ([]v1alpha1.ListenerIngress, client.ObjectKey, error) {
	podName, podNS := vctx[v1alpha1.ContextPodName], vctx[v1alpha1.ContextPodNamespace]
	if podName == "" || podNS == "" {
		return nil, client.ObjectKey{}, status.Errorf(codes.InvalidArgument,
			"volume context lacks %s and %s: the CSIDriver object must set podInfoOnMount: true",
			v1alpha1.ContextPodName, v1alpha1.ContextPodNamespace)
	}
	ref, err := s.volumeRef(ctx, volumeID, vctx, podNS)
	if err != nil {
		return nil, client.ObjectKey{}, err
	}

	pod := &corev1.Pod{}
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: podNS, Name: podName}, pod); err != nil {
		return nil, ref.listener, apiError(ctx, err, codes.NotFound, fmt.Sprintf("pod %s/%s", podNS, podName))
	}
	listener := &v1alpha1.Listener{}
	if err := s.reader.Get(ctx, ref.listener, listener); err != nil {
		// A per-claim Listener appears once the reconciler has seen the
		// claim: a short wait, not an error of the user's.
		return nil, ref.listener, apiError(ctx, err, codes.Unavailable, fmt.Sprintf("listener %s (waiting for it to be created)", ref.listener))
	}
	v := addresses.PodVolume{Pod: pod, Volume: ref.volume(), Listener: listener}
	if w := addresses.Publishable(v.Volume, listener, pod); w != nil {
		// Before reading the class and node: their trouble would hide
		// why the Listener may not be published.
		return nil, ref.listener, waitStatus(w)
	}
	// A class that is gone leaves the Service as it was last made, and the
	// pod is told what its Listener publishes (addresses.ForPod).
	className := *listener.Spec.ClassName // Publishable refuses none
	class := &v1alpha1.ListenerClass{}
	if err := s.reader.Get(ctx, client.ObjectKey{Name: className}, class); apierrors.IsNotFound(err) {
		class = nil
	} else if err != nil {
		return nil, ref.listener, apiError(ctx, err, codes.FailedPrecondition, fmt.Sprintf("ListenerClass %q of listener %s", className, ref.listener))
	}
	v.Class = class
	if addresses.PodServiceType(listener, class) == v1alpha1.ServiceTypeNodePort {
		nodeName := pod.Spec.NodeName
		if nodeName == "" {
			nodeName = s.nodeName
		}
		v.Node = &corev1.Node{}
		if err := s.reader.Get(ctx, client.ObjectKey{Name: nodeName}, v.Node); err != nil {
			return nil, ref.listener, apiError(ctx, err, codes.FailedPrecondition, fmt.Sprintf("node %s of pod %s/%s", nodeName, podNS, podName))
		}
	}
	addrs, err := podAddresses(v)
	return addrs, ref.listener, err
}

// volumeRef names the volume's Listener and claim: from the volume context
// that CreateVolume wrote; for a volume provisioned some other way (by hand,
// by the existing Stackable operator), from the claim bound to the
// PersistentVolume; for a volume of an earlier version of this driver
// (no claim UID in the context), from the claim itself.
func (s *nodeServer) volumeRef(ctx context.Context, volumeID string, vctx map[string]string, podNS string) (volumeRef, error) {
	if name, ns := vctx[volumes.ContextListenerName], vctx[volumes.ContextClaimNamespace]; name != "" && ns != "" {
		ref := volumeRef{
			listener: client.ObjectKey{Namespace: ns, Name: name},
			claim:    client.ObjectKey{Namespace: ns, Name: vctx[volumes.ContextClaimName]},
			claimUID: types.UID(vctx[volumes.ContextClaimUID]),
			perClaim: vctx[volumes.ContextPerClaim] == "true",
			volumeID: volumeID,
		}
		if ref.claimUID != "" || ref.claim.Name == "" {
			return ref, nil
		}
		claim := &corev1.PersistentVolumeClaim{}
		if err := s.live.Get(ctx, ref.claim, claim); err != nil {
			return volumeRef{}, apiError(ctx, err, codes.NotFound, fmt.Sprintf("PersistentVolumeClaim %s", ref.claim))
		}
		cl, err := listenerOfClaim(claim, nil)
		if err != nil {
			return volumeRef{}, err
		}
		ref.claimUID, ref.perClaim = claim.UID, cl.Own
		return ref, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := s.live.Get(ctx, client.ObjectKey{Name: volumeID}, pv); err != nil {
		return volumeRef{}, apiError(ctx, err, codes.NotFound, fmt.Sprintf("PersistentVolume %s", volumeID))
	}
	if pv.Spec.ClaimRef == nil {
		return volumeRef{}, status.Errorf(codes.FailedPrecondition, "PersistentVolume %s is not bound to a claim", volumeID)
	}
	claimKey := client.ObjectKey{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name}
	if claimKey.Namespace == "" {
		claimKey.Namespace = podNS
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := s.live.Get(ctx, claimKey, claim); err != nil {
		return volumeRef{}, apiError(ctx, err, codes.NotFound, fmt.Sprintf("PersistentVolumeClaim %s", claimKey))
	}
	if uid := pv.Spec.ClaimRef.UID; uid != "" && uid != claim.UID {
		return volumeRef{}, status.Errorf(codes.Unavailable, "PersistentVolume %s is bound to an earlier claim %s (uid %s): waiting for it to be released", volumeID, claimKey, uid)
	}
	cl, err := listenerOfClaim(claim, pv)
	if err != nil {
		return volumeRef{}, err
	}
	return volumeRef{
		listener: client.ObjectKey{Namespace: claim.Namespace, Name: cl.Listener},
		claim:    claimKey,
		claimUID: claim.UID,
		perClaim: cl.Own,
		volumeID: pv.Name,
	}, nil
}

// publish writes addrs into target, creating and (sealed) mounting it
// first if needed. kubelet creates the parent; the target itself is ours
// to create, and to remove again if this first publish fails (a republish
// keeps the previous tree, which the atomic write leaves intact on
// failure). A target that already holds a plain tree (published before
// this node plugin sealed volumes) stays plain until its pod goes: a mount
// over it now would hide nothing from the running pod, which keeps seeing
// the directory, and would stop its updates.
func (s *nodeServer) publish(ctx context.Context, target string, readOnly bool, addrs []v1alpha1.ListenerIngress) (changed bool, err error) {
	if dir, ok := podsDirOf(target); ok {
		s.podsDirs.add(dir)
	}
	state, mountedRO, err := inspectTarget(target)
	if err != nil {
		return false, err
	}
	if state == targetForeign {
		return false, fmt.Errorf("target %s is a mount point of something other than a listener volume", target)
	}
	if state == targetMissing {
		if err := os.Mkdir(target, 0o755); err != nil {
			return false, fmt.Errorf("create target path %s: %w", target, err)
		}
		defer func() {
			if err != nil {
				if rmErr := removeTarget(target); rmErr != nil {
					logr.FromContextOrDiscard(ctx).Error(rmErr, "clean up after a failed publish", "targetPath", target)
				}
			}
		}()
		state = targetPlain // empty: sealed below
	}
	if s.seal && state != targetSealed {
		empty, err := isEmptyDir(target)
		if err != nil {
			return false, fmt.Errorf("inspect target %s: %w", target, err)
		}
		if empty {
			if err := mountSealed(target); err != nil {
				return false, err
			}
			state = targetSealed
		} else {
			logr.FromContextOrDiscard(ctx).V(1).Info("target holds a tree published before volumes were sealed: it stays a plain directory until its pod goes", "targetPath", target)
		}
	}
	if state != targetSealed {
		return addresstree.Write(target, addrs)
	}
	if mountedRO && !readOnly {
		if err := remountSealed(target, false); err != nil {
			return false, err
		}
		mountedRO = false
	}
	if readOnly {
		// Sealed again whatever the write does: kubelet makes the pod's
		// own mount read-only too.
		defer func() {
			if !mountedRO {
				if roErr := remountSealed(target, true); roErr != nil && err == nil {
					err = roErr
				}
			}
		}()
	}
	changed, err = addresstree.Write(target, addrs)
	if errors.Is(err, unix.EROFS) && mountedRO {
		// A read-only volume whose tree changed: writable only while
		// it is written (an unchanged tree is only read and compared).
		if err := remountSealed(target, false); err != nil {
			return false, err
		}
		mountedRO = false
		changed, err = addresstree.Write(target, addrs)
	}
	if errors.Is(err, unix.ENOSPC) {
		err = fmt.Errorf("the volume is full (a sealed volume holds %d KiB and %d entries; what the pod wrote into it stays until the pod goes): %w", VolumeSizeLimit>>10, VolumeInodeLimit, err)
	}
	return changed, err
}

// NodeUnpublishVolume unmounts the volume and removes the target, and
// unbinds it (VolumeBinder); a target that is already gone is fine
// (kubelet retries after crashes).
func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	defer s.lock(req.GetTargetPath())()
	if err := removeTarget(req.GetTargetPath()); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", req.GetVolumeId(), err)
	}
	if s.binder != nil {
		s.binder.Unbind(req.GetTargetPath())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
