package csi

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// listenerOfClaim is the Listener a claim's volume publishes
// (claims.Of): the one named by the listener-name annotation, or the
// per-claim Listener that the reconciler creates for a claim with a
// listener-class annotation; once bound to pv (nil: not yet), the one
// recorded on the volume (claims.Bound). A claim that uses none is refused
// with FailedPrecondition saying what to fix. The caller (csi-provisioner,
// kubelet) asks only about volumes of this driver's storage class.
func listenerOfClaim(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (claims.Use, error) {
	use := claims.Bound(claim, claims.Of(claim.Name, claim.Annotations), pv)
	if use.Listener == "" {
		return use, status.Errorf(codes.FailedPrecondition, "PersistentVolumeClaim %s/%s %s", claim.Namespace, claim.Name, use.Problem)
	}
	return use, nil
}

// podAddresses is what the pod of v advertises: addresses.ForPod, the one
// rule that the pod's PodListeners entry follows too.
func podAddresses(v addresses.PodVolume) ([]v1alpha1.ListenerIngress, error) {
	pl, err := addresses.ForPod(v)
	var w *addresses.Wait
	if errors.As(err, &w) {
		return nil, waitStatus(w)
	}
	return pl.IngressAddresses, err
}

// waitStatus is a wait as a gRPC status: Unavailable, so that kubelet
// retries, or FailedPrecondition when only a user can end it.
func waitStatus(w *addresses.Wait) error {
	if w.Fix {
		return status.Error(codes.FailedPrecondition, w.Reason)
	}
	return status.Error(codes.Unavailable, w.Reason)
}

// checkCapability accepts mount volumes of any access mode: the tree is
// read-only data that any number of pods may share. Block volumes make no
// sense for a file tree.
func checkCapability(c *csi.VolumeCapability) error {
	switch {
	case c == nil:
		return status.Error(codes.InvalidArgument, "volume capability is required")
	case c.GetBlock() != nil:
		return status.Error(codes.InvalidArgument, "listener volumes are file trees: block access is not supported, use a filesystem volume")
	case c.GetMount() == nil:
		return status.Error(codes.InvalidArgument, "volume capability needs an access type (mount)")
	case c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN:
		return status.Error(codes.InvalidArgument, "volume capability needs an access mode")
	}
	return nil
}

// apiError turns a failed read of the object described by what into a gRPC
// status: NotFound (with the given code) names the object, Forbidden points
// at RBAC, and anything else is the API server's trouble, reported
// Unavailable so that the caller retries.
func apiError(ctx context.Context, err error, notFound codes.Code, what string) error {
	switch {
	case apierrors.IsNotFound(err):
		return status.Errorf(notFound, "%s not found", what)
	case apierrors.IsForbidden(err):
		return status.Errorf(codes.PermissionDenied, "read %s: %v (does the driver's service account have its ClusterRole: listener-operator-csi for the controller, listener-operator-csi-node for the node plugin?)", what, err)
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return status.Errorf(codes.Canceled, "read %s: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return status.Errorf(codes.DeadlineExceeded, "read %s: %v", what, err)
	}
	return status.Errorf(codes.Unavailable, "read %s: %v", what, err)
}
