package caches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pinned is the required node affinity the pod webhook writes for a pinned
// listener volume.
var pinned = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
	{Key: "listeners.stackable.tech/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}},
}}}}

func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:          map[string]string{"app": "web", "listener.stackable.tech/mnt.x": "true"},
			Annotations:     map[string]string{"keep": "me", annotationLastApplied: "{...}"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1",
			Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pinned, PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}},
			},
			Volumes: []corev1.Volume{
				{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "listener-web-0"}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"listeners.stackable.tech/listener-class": "external"}},
				}}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "big"}}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "B"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "i", Ports: []corev1.ContainerPort{{ContainerPort: 1}}}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.1"}},
		},
	}
}

// TestTrimPod: what the reconcilers read survives, everything else is gone.
func TestTrimPod(t *testing.T) {
	got, err := TrimPod(fullPod())
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:          map[string]string{"app": "web", "listener.stackable.tech/mnt.x": "true"},
			Annotations:     map[string]string{"keep": "me"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1",
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pinned}},
			Volumes: []corev1.Volume{
				{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "listener-web-0"}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
			// A per-claim Listener's ports come from these.
			Containers: []corev1.Container{{Name: "c",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("trimmed pod:\n got %+v\nwant %+v", got, want)
	}
	again, _ := TrimPod(got)
	if !equality.Semantic.DeepEqual(again, want) {
		t.Fatalf("trimming twice changed the pod: %+v", again)
	}
}

// TestTransformsPassOtherObjects: an informer may hand a tombstone or
// another type; it passes unchanged.
func TestTransformsPassOtherObjects(t *testing.T) {
	for name, fn := range map[string]func(any) (any, error){"TrimPod": TrimPod, "TrimNode": TrimNode, "StripManagedFields": StripManagedFields} {
		other := "not an object"
		got, err := fn(other)
		if err != nil || got != other {
			t.Errorf("%s(%q) = %v, %v; want it unchanged", name, other, got, err)
		}
	}
}

func TestTrimNodeAndStripManagedFields(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:    []corev1.ContainerImage{{Names: []string{"big"}}},
		},
	}
	got, _ := TrimNode(n)
	gn := got.(*corev1.Node)
	if gn.ManagedFields != nil || gn.Status.Images != nil || len(gn.Status.Addresses) != 1 {
		t.Fatalf("trimmed node: %+v", gn)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	got, _ = StripManagedFields(pvc)
	if g := got.(*corev1.PersistentVolumeClaim); g.ManagedFields != nil || g.Annotations["a"] != "b" {
		t.Fatalf("stripped claim: %+v", g)
	}
}

// TestTrimPodWithoutClaims: a pod with no claim-backed volume keeps no
// volumes and no containers: nothing reads them.
func TestTrimPodWithoutClaims(t *testing.T) {
	pod := fullPod()
	pod.Spec.Volumes = pod.Spec.Volumes[2:]
	got, _ := TrimPod(pod)
	gp := got.(*corev1.Pod)
	if gp.Spec.Volumes != nil || gp.Spec.Containers != nil || gp.Spec.NodeName != "n1" {
		t.Fatalf("trimmed pod without claims: volumes %v, containers %v, node %q", gp.Spec.Volumes, gp.Spec.Containers, gp.Spec.NodeName)
	}
}
