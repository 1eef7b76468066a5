package volumes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestPersistentVolume(t *testing.T) {
	claim := func(size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0-listener", UID: "uid-1", ResourceVersion: "7",
				Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(v1alpha1.StorageClassName),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
				VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
			},
		}
		if size != "" {
			c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		}
		return c
	}
	sc := func(policy *corev1.PersistentVolumeReclaimPolicy, provisioner string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.StorageClassName}, Provisioner: provisioner,
			ReclaimPolicy: policy, MountOptions: []string{"noexec"}}
	}
	own := claims.Use{Listener: "web-0-listener", Own: true, Class: "external"}
	for _, tc := range []struct {
		name        string
		req         Request
		wantErr     string
		wantNode    string
		wantSize    string
		wantReclaim corev1.PersistentVolumeReclaimPolicy
	}{
		{name: "unpinned", req: Request{Claim: claim("5Mi"), Use: own, StorageClass: sc(nil, v1alpha1.DriverName)},
			wantSize: "5Mi", wantReclaim: corev1.PersistentVolumeReclaimDelete},
		{name: "pinned", req: Request{Claim: claim("1"), Use: own, StorageClass: sc(nil, v1alpha1.DriverName), Node: "node-a"},
			wantNode: "node-a", wantSize: "1", wantReclaim: corev1.PersistentVolumeReclaimDelete},
		{name: "the class's reclaim policy", req: Request{Claim: claim("1"), Use: own, StorageClass: sc(ptr.To(corev1.PersistentVolumeReclaimRetain), v1alpha1.DriverName)},
			wantSize: "1", wantReclaim: corev1.PersistentVolumeReclaimRetain},
		{name: "a claim without a size", req: Request{Claim: claim(""), Use: own, StorageClass: sc(nil, v1alpha1.DriverName)},
			wantSize: "1", wantReclaim: corev1.PersistentVolumeReclaimDelete},
		{name: "no UID", req: Request{Claim: func() *corev1.PersistentVolumeClaim { c := claim("1"); c.UID = ""; return c }(), Use: own, StorageClass: sc(nil, v1alpha1.DriverName)},
			wantErr: "has no UID"},
		{name: "no Listener", req: Request{Claim: claim("1"), StorageClass: sc(nil, v1alpha1.DriverName)}, wantErr: "uses no Listener"},
		{name: "another provisioner's class", req: Request{Claim: claim("1"), Use: own, StorageClass: sc(nil, "ebs.csi.aws.com")}, wantErr: "not provisioned by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv, err := PersistentVolume(tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pv.Name != "pvc-uid-1" || pv.Spec.CSI.VolumeHandle != pv.Name || pv.Spec.CSI.Driver != v1alpha1.DriverName {
				t.Errorf("name %q, handle %q, driver %q: want csi-provisioner's name pvc-<uid> for both, and this driver", pv.Name, pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver)
			}
			if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != "uid-1" || ref.Name != "web-0-listener" || ref.Namespace != "ns" || ref.Kind != "PersistentVolumeClaim" {
				t.Errorf("claimRef %+v: want bound to the claim", ref)
			}
			if nodes := addresses.PinnedNodes(pv); (tc.wantNode == "" && len(nodes) != 0) || (tc.wantNode != "" && (len(nodes) != 1 || nodes[0] != tc.wantNode)) {
				t.Errorf("pinned to %v, want %q", nodes, tc.wantNode)
			}
			if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse(tc.wantSize)) != 0 {
				t.Errorf("capacity %s, want %s (the binding needs at least the claim's request)", got.String(), tc.wantSize)
			}
			if pv.Spec.PersistentVolumeReclaimPolicy != tc.wantReclaim {
				t.Errorf("reclaim policy %s, want %s", pv.Spec.PersistentVolumeReclaimPolicy, tc.wantReclaim)
			}
			if pv.Spec.AccessModes[0] != corev1.ReadWriteOncePod || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pv.Spec.MountOptions[0] != "noexec" {
				t.Errorf("spec %+v: want the claim's access and volume modes and the class's mount options", pv.Spec)
			}
			if !claims.Marked(pv.Labels) || pv.Labels[v1alpha1.LabelVolumeListener] != own.Listener || pv.Annotations[AnnotationProvisionedBy] != v1alpha1.DriverName {
				t.Errorf("metadata %+v: want marked, labelled with its Listener and provisioned by %s", pv.ObjectMeta, v1alpha1.DriverName)
			}
			if got := pv.Spec.CSI.VolumeAttributes; got[ContextClaimUID] != "uid-1" || got[ContextListenerName] != own.Listener || got[ContextPerClaim] != "true" {
				t.Errorf("volume context %v", got)
			}
		})
	}
}

func TestClassName(t *testing.T) {
	shared := &v1alpha1.Listener{Spec: v1alpha1.ListenerSpec{ClassName: ptr.To("external")}}
	for _, tc := range []struct {
		name     string
		use      claims.Use
		listener *v1alpha1.Listener
		want     string
	}{
		{"own Listener: the claim's class", claims.Use{Listener: "web-0", Own: true, Class: "internal"}, shared, "internal"},
		{"shared Listener: its class", claims.Use{Listener: "kafka"}, shared, "external"},
		{"shared Listener without a class", claims.Use{Listener: "kafka"}, &v1alpha1.Listener{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassName(tc.use, tc.listener); got != tc.want {
				t.Errorf("ClassName = %q, want %q", got, tc.want)
			}
		})
	}
}
