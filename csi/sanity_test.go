package csi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestSanity runs the upstream CSI conformance suite (csi-test's sanity
// package) against the real driver reading from the real API server, with a
// listener claim, its class, its Listener (status published as the
// reconciler would), a pod and its node seeded.
//
// In a cluster two Kubernetes components stand between csi-sanity's calls
// and the driver, and the test plays them in a client interceptor:
// csi-provisioner, which creates a PersistentVolume for every volume
// CreateVolume returns (and deletes it after DeleteVolume), and kubelet,
// which adds the pod's name and namespace to the NodePublishVolume volume
// context (podInfoOnMount).
//
// The node service reads Listeners through a ListenerScope, as the node
// plugin does in a cluster (csi-sanity's suite can run once per process).
func TestSanity(t *testing.T) {
	f := newFixture(t)
	claim := f.claim("sanity", map[string]string{v1alpha1.AnnotationListenerClass: f.nodePort})
	f.listener(names.ClaimListenerName(claim.Name), f.nodePort, v1alpha1.ListenerStatus{
		NodePorts: map[string]int32{"http": 30080},
	})
	// Sealed volumes (tmpfs mounts) as in a cluster, where the test may mount.
	d := startScoped(t, f.node, ListenerScopeOptions{}, true, os.Geteuid() == 0, nil)
	// ValidateVolumeCapabilities looks up the PersistentVolumes the
	// provisioner side creates from the API server: nothing to await.
	f.cache = d.cache

	cfg := sanity.NewTestConfig()
	cfg.Address = "unix://" + d.socket
	cfg.TargetPath = filepath.Join(t.TempDir(), "target")
	cfg.StagingPath = filepath.Join(t.TempDir(), "staging")
	cfg.TestVolumeParameters = map[string]string{
		v1alpha1.ParamPVCName:      claim.Name,
		v1alpha1.ParamPVCNamespace: claim.Namespace,
	}
	cfg.DialOptions = []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(kubernetesSide(f, claim)),
	}
	sanity.Test(t, cfg)
	wantNoListenerUsers(t, d.scope)
}

// kubernetesSide plays csi-provisioner and kubelet around the driver.
func kubernetesSide(f *fixture, claim *corev1.PersistentVolumeClaim) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if pub, ok := req.(*csi.NodePublishVolumeRequest); ok {
			pub = proto.Clone(pub).(*csi.NodePublishVolumeRequest)
			if pub.VolumeContext == nil {
				pub.VolumeContext = map[string]string{}
			}
			pub.VolumeContext[v1alpha1.ContextPodName] = f.pod
			pub.VolumeContext[v1alpha1.ContextPodNamespace] = f.ns
			req = pub
		}
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		switch r := reply.(type) {
		case *csi.CreateVolumeResponse:
			pv := &corev1.PersistentVolume{
				// Marked, as the claim reconciler marks a bound
				// listener volume: the controller looks for a volume
				// by handle only among those.
				ObjectMeta: metav1.ObjectMeta{Name: pvName(r.GetVolume().GetVolumeId()), Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					ClaimRef:    &corev1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name},
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
						Driver:           v1alpha1.DriverName,
						VolumeHandle:     r.GetVolume().GetVolumeId(),
						VolumeAttributes: r.GetVolume().GetVolumeContext(),
					}},
				},
			}
			switch err := f.c.Create(ctx, pv); {
			case err == nil:
				f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), pv) })
			case !apierrors.IsAlreadyExists(err):
				f.t.Errorf("provisioner side: create PersistentVolume %s: %v", pv.Name, err)
			}
		case *csi.DeleteVolumeResponse:
			id := req.(*csi.DeleteVolumeRequest).GetVolumeId()
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName(id)}}
			if err := f.c.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
				f.t.Errorf("provisioner side: delete PersistentVolume %s: %v", id, err)
			}
		}
		return nil
	}
}

// pvName names the PersistentVolume of a volume. csi-provisioner uses the
// CreateVolume name ("pvc-<claim uid>"), but csi-sanity's names have upper
// case letters that object names cannot, so the volume handle is what ties
// the two together here.
func pvName(volumeID string) string {
	sum := sha256.Sum256([]byte(volumeID))
	return "pv-" + hex.EncodeToString(sum[:8])
}
