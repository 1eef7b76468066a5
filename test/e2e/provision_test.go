//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestClaimBoundBeforeItsPod: the operator provisions the volume of a
// listener claim of an unpinned class as soon as the claim exists, and the
// PV controller binds it, although the storage class binds on first
// consumer and no pod uses the claim yet (through csi-provisioner alone it
// would stay Pending until a pod is scheduled). A pod that comes later
// finds its claim bound and reads its address.
func TestClaimBoundBeforeItsPod(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-provision")
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "early", Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
	if err := k8s.client.Create(ctx, claim); err != nil {
		t.Fatalf("create claim: %v", err)
	}
	eventually(t, ctx, time.Minute, "the claim bound without a pod", func(ctx context.Context) (bool, string) {
		var got corev1.PersistentVolumeClaim
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(claim), &got); err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.ClaimBound, string(got.Status.Phase)
	})
	pv := boundVolume(t, ctx, ns, claim.Name)
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID || pinnedNode(pv) != "" {
		t.Errorf("volume %s: claimRef %+v, pinned to %q; want this claim's, unpinned", pv.Name, pv.Spec.ClaimRef, pinnedNode(pv))
	}
	eventually(t, ctx, time.Minute, "the operator's event on the claim", func(ctx context.Context) (bool, string) {
		var list eventsv1.EventList
		if err := k8s.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == claim.Name && ev.Reason == "ProvisioningSucceeded" && strings.Contains(ev.Note, "listener-operator") {
				return true, ""
			}
		}
		return false, "no ProvisioningSucceeded event of the operator"
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late", Labels: map[string]string{"app": "late"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"-listen", ":8080"}, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "listener", MountPath: "/stackable/listener"}}}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}},
		},
	}
	if err := k8s.client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	podsReady(t, ctx, ns, "late", 1, podTimeout)
	if addr, port := defaultAddress(t, tree(t, ctx, ns, "late")); addr == "" || port == "" {
		t.Errorf("pod late reads address %q port %q", addr, port)
	}
}
