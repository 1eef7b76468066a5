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

// podAddresses is what a pod on node advertises for listener of class: its
// own node's address with the node ports for NodePort classes, else every
// address of the Listener. An error is a gRPC status: Unavailable while the
// reconciler has not published what is needed yet, so kubelet retries.
func podAddresses(listener *v1alpha1.Listener, class *v1alpha1.ListenerClass, node *corev1.Node) ([]v1alpha1.ListenerIngress, error) {
	if class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort {
		if len(listener.Status.NodePorts) == 0 && len(listener.Spec.Ports) > 0 {
			return nil, status.Errorf(codes.Unavailable,
				"listener %s/%s has no addresses yet: waiting for the node ports of its NodePort Service in status.nodePorts",
				listener.Namespace, listener.Name)
		}
		ing, ok := addresses.NodeIngress(node, class.Spec.EffectiveAddressType(), listener.Status.NodePorts)
		if !ok {
			return nil, status.Errorf(codes.Unavailable,
				"listener %s/%s has no addresses yet: waiting for node %s to report an IP address or hostname in its status",
				listener.Namespace, listener.Name, node.Name)
		}
		// The class's DNS name first, as in the Listener's status.
		return addresses.WithHostname(addresses.ListenerHostname(&class.Spec, listener), []v1alpha1.ListenerIngress{ing}), nil
	}
	if len(listener.Status.IngressAddresses) == 0 {
		what := "the reconciler to publish status.ingressAddresses"
		if class.Spec.ServiceType == v1alpha1.ServiceTypeLoadBalancer {
			what = "the load balancer of its Service to get an address"
		}
		return nil, status.Errorf(codes.Unavailable, "listener %s/%s has no addresses yet: waiting for %s",
			listener.Namespace, listener.Name, what)
	}
	return listener.Status.IngressAddresses, nil
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
