package csi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestNodePublishOnlyWhatBelongsToThePod: a pod gets a Listener's addresses
// only while that Listener is the one its volume was made for and its
// status is current for the pod; otherwise kubelet is told (Unavailable)
// what the driver waits for, and nothing is written.
func TestNodePublishOnlyWhatBelongsToThePod(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	ctx := context.Background()
	http := v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "web.example", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
	}}
	// A pod of a rolling update that declares a port its Listener lacks.
	// It mounts its listener volume through a claim, as every pod the
	// driver publishes for does (the CSIDriver allows Persistent volumes
	// only): the node plugin's cache keeps container ports of such pods
	// (caches.TrimPod).
	f.create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "new-version"},
		Spec: corev1.PodSpec{NodeName: f.node, Containers: []corev1.Container{{Name: "app", Image: "app",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "admin", ContainerPort: 9000}}}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "rolling"}}}}},
	})

	// A claim deleted and made again under the same name: the Listener
	// still there is the old claim's.
	old := f.listener("recreated", f.clusterIP, http)
	f.claimUIDs["recreated"] = "uid-of-the-new-claim"

	// Node-loss recovery released it, no claim adopted it yet.
	orphan := f.listener("orphan", f.clusterIP, http)
	orphan.OwnerReferences = nil
	if err := f.c.Update(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	f.setStatus(orphan, http)

	// The existing Stackable operator's per-claim Listeners belong to the
	// PersistentVolume.
	legacy := f.listener("legacy", f.clusterIP, http)
	legacy.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolume", Name: "pvc-legacy-volume", UID: "pv-uid", Controller: ptr.To(true)}}
	if err := f.c.Update(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	f.setStatus(legacy, http)

	// Being deleted (a finalizer holds it): neither a per-claim nor a
	// shared Listener is published.
	deleting := func(name string) {
		l := f.listener(name, f.clusterIP, http)
		l.Finalizers = []string{"test.example/hold"}
		if err := f.c.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := f.c.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.c.Patch(context.Background(), l, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		})
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			t.Fatal(err)
		}
		f.await(l)
	}
	deleting("going")
	deleting("shared-going")

	// The spec moved on, the reconciler has not caught up.
	stale := f.listener("stale", f.clusterIP, http)
	stale.Spec.Ports = append(stale.Spec.Ports, v1alpha1.ListenerPort{Name: "admin", Port: 9000})
	if err := f.c.Update(ctx, stale); err != nil {
		t.Fatal(err)
	}
	f.await(stale)

	// A port of the Listener with no published number.
	unpublished := f.listener("unpublished", f.clusterIP, http)
	unpublished.Spec.Ports = append(unpublished.Spec.Ports, v1alpha1.ListenerPort{Name: "admin", Port: 9000})
	if err := f.c.Update(ctx, unpublished); err != nil {
		t.Fatal(err)
	}
	f.setStatus(unpublished, http)

	// The rolling update's pod: the Listener has http but not admin yet.
	f.listener("rolling", f.clusterIP, http)

	shared := f.volumeContext("some-claim", "shared-going")
	onPod := func(vctx map[string]string, pod string) map[string]string {
		vctx[v1alpha1.ContextPodName] = pod
		return vctx
	}
	tests := []struct {
		name     string
		volumeID string
		vctx     map[string]string
		code     codes.Code
		msgs     []string
	}{
		{"a recreated claim does not get the old claim's Listener", "vol", f.volumeContext("recreated", "recreated"), codes.Unavailable,
			[]string{"listener " + f.ns + "/recreated belongs to PersistentVolumeClaim recreated (uid " + string(old.OwnerReferences[0].UID) + "), not to claim " + f.ns + "/recreated (uid uid-of-the-new-claim)", "waiting for the old Listener to be garbage-collected"}},
		{"a Listener without a controller is not published", "vol", f.volumeContext("orphan", "orphan"), codes.Unavailable, []string{"belongs to no controller"}},
		{"a Stackable-made Listener owned by the volume is published", "pvc-legacy-volume", f.volumeContext("legacy", "legacy"), codes.OK, nil},
		{"a Stackable-made Listener owned by another volume is not", "pvc-other-volume", f.volumeContext("legacy", "legacy"), codes.Unavailable, []string{"belongs to PersistentVolume pvc-legacy-volume"}},
		{"a per-claim Listener being deleted", "vol", f.volumeContext("going", "going"), codes.Unavailable, []string{"listener " + f.ns + "/going is being deleted"}},
		{"a shared Listener being deleted", "vol", shared, codes.Unavailable, []string{"listener " + f.ns + "/shared-going is being deleted"}},
		{"a status older than the spec", "vol", f.volumeContext("stale", "stale"), codes.Unavailable, []string{"listener " + f.ns + "/stale has status of generation 1, its spec is generation 2: waiting for the reconciler"}},
		{"a port without a published number", "vol", f.volumeContext("unpublished", "unpublished"), codes.Unavailable, []string{"has not published port(s) admin yet"}},
		{"a pod port the Listener lacks", "vol", onPod(f.volumeContext("rolling", "rolling"), "new-version"), codes.Unavailable,
			[]string{"listener " + f.ns + "/rolling lacks the port(s) 9000/TCP that pod " + f.ns + "/new-version declares: waiting for the reconciler to add them"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			target := filepath.Join(parent, "mount")
			err := publish(d, tt.volumeID, target, tt.vctx)
			if tt.code == codes.OK {
				if err != nil {
					t.Fatalf("NodePublishVolume: %v", err)
				}
				if got := readFile(t, filepath.Join(target, "default-address/address")); got != "web.example" {
					t.Errorf("default-address/address = %q", got)
				}
				return
			}
			wantCode(t, err, tt.code, tt.msgs...)
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a refused publish left %v behind", entries)
			}
		})
	}
}
