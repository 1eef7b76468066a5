package robustness

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/csi/addresstree"
)

// podWorld is world() with tenant 0's Listener web published at one
// address, a Running pod "pod-web" whose listener volume (claim
// "claim-web", naming the shared Listener web) tells it that address, and
// its PodListeners saying the same; change edits it.
func podWorld(change func(s *Snapshot)) *Snapshot {
	return world(Op{Kind: PutClass, Type: v1alpha1.ServiceTypeClusterIP}, func(s *Snapshot) {
		ns := s.World.Tenants[0]
		addrs := []v1alpha1.ListenerIngress{{Address: "web." + ns + ".svc.example.test", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"p0": 80}}}
		l := &s.Listeners[0][0]
		l.Status.ServiceType, l.Status.IngressAddresses = v1alpha1.ServiceTypeClusterIP, addrs
		claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-web", Namespace: ns, UID: "claim-uid",
			Annotations: map[string]string{v1alpha1.AnnotationListenerName: "web"}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName)}}
		pod := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-web", Namespace: ns, UID: "pod-uid"},
			Spec: corev1.PodSpec{NodeName: s.World.NodeName(0), Volumes: []corev1.Volume{{Name: v1alpha1.VolumeName,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-web"}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		s.Claims[0], s.Pods[0] = []corev1.PersistentVolumeClaim{claim}, []corev1.Pod{pod}
		s.PodListeners[0] = []v1alpha1.PodListeners{{ObjectMeta: metav1.ObjectMeta{Name: names.PodListenersName(pod.UID), Namespace: ns},
			Spec: v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{v1alpha1.VolumeName: {Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: addrs}}}}}
		s.Told = map[string]Told{toldKey(&pod, v1alpha1.VolumeName): {Tree: treeOf(addrs)}}
		if change != nil {
			change(s)
		}
	})
}

// TestPodsToldTheirAddresses: the invariant holds on a pod told what
// addresses.ForPod says, in its volume and its PodListeners, and reports
// each way the two can part.
func TestPodsToldTheirAddresses(t *testing.T) {
	key := "rb7-tenant-a/pod-web/" + v1alpha1.VolumeName
	wait := func(s *Snapshot) {
		s.Listeners[0][0].Status.Conditions[0].ObservedGeneration = 3 // a status of an older spec
		s.Listeners[0][0].Generation = 4
		s.Told[key] = Told{Tree: s.Told[key].Tree, Refused: "waiting for the reconciler"}
	}
	tests := []struct {
		name   string
		change func(s *Snapshot)
		want   string // in the breach; "" for none
	}{
		{name: "as it should be"},
		{name: "a pod that is not Running is not judged", change: func(s *Snapshot) {
			s.Pods[0][0].Status.Phase = corev1.PodPending
			delete(s.Told, key)
		}},
		{name: "the volume holds another port", change: func(s *Snapshot) { s.Told[key].Tree.Ports["web.rb7-tenant-a.svc.example.test"]["p0"] = 81 }, want: "from its volume"},
		{name: "PodListeners says another address", change: func(s *Snapshot) {
			s.PodListeners[0][0].Spec.Listeners[v1alpha1.VolumeName] = v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: []v1alpha1.ListenerIngress{{Address: "10.0.0.1"}}}
		}, want: "its PodListeners says"},
		{name: "no PodListeners", change: func(s *Snapshot) { s.PodListeners[0] = nil }, want: "its PodListeners says <nil>"},
		{name: "refused though ForPod publishes", change: func(s *Snapshot) { s.Told[key] = Told{Refused: "no"} }, want: "NodePublishVolume refused (no)"},
		{name: "never published", change: func(s *Snapshot) { delete(s.Told, key) }, want: "is not published"},
		{name: "a wait keeps what both held", change: wait},
		{name: "published though ForPod waits", change: func(s *Snapshot) { wait(s); s.Told[key] = Told{Tree: s.Told[key].Tree} }, want: "must wait"},
		{name: "a wait where the two part", change: func(s *Snapshot) { wait(s); s.PodListeners[0] = nil; s.Told[key] = Told{Refused: "x", Tree: Tree{}} }},
		{name: "a wait where the two part, both kept", change: func(s *Snapshot) { wait(s); s.Told[key] = Told{Refused: "x"} }, want: "they must keep the same"},
		{name: "refused while the Listener is Ready", change: func(s *Snapshot) {
			s.Listeners[0][0].Spec.ClassName = nil // Publishable waits: no class
			s.Told[key] = Told{Tree: s.Told[key].Tree, Refused: "listener has no spec.className"}
		}, want: "though the Listener is Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBreach(t, PodsToldTheirAddresses(Step{Cur: podWorld(tt.change)}), tt.want)
		})
	}
}

// TestReadTold: a tree the address tree writer wrote reads back as the
// addresses it was given say (the first is the default; a repeated
// address is in it once, with its first ports).
func TestReadTold(t *testing.T) {
	addrs := []v1alpha1.ListenerIngress{
		{Address: "web.example.test", Ports: map[string]int32{"http": 80, "https": 443}},
		{Address: "10.0.0.7", Ports: map[string]int32{"http": 30080}},
		{Address: "web.example.test", Ports: map[string]int32{"http": 1}},
	}
	target := filepath.Join(t.TempDir(), "mount")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := addresstree.Write(target, addrs); err != nil {
		t.Fatal(err)
	}
	got, err := readTold(target)
	if err != nil {
		t.Fatal(err)
	}
	want := Tree{Default: "web.example.test", Ports: map[string]map[string]int32{"web.example.test": {"http": 80, "https": 443}, "10.0.0.7": {"http": 30080}}}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(treeOf(addrs), want) {
		t.Errorf("read %v, treeOf %v; want %v", got, treeOf(addrs), want)
	}
}
