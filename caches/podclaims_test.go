package caches

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestPodsOfClaim: for every claim, PodsOfClaim lists exactly the pods
// whose volumes use it (names.PodClaimNames, what the index held before it
// left out ephemeral claims), while the index holds only the claims that
// volumes name.
func TestPodsOfClaim(t *testing.T) {
	ephemeral := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	}
	named := func(name, claim string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	other := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	pod := func(ns, name string, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{Volumes: vols}}
	}
	pods := []*corev1.Pod{
		pod("ns", "web-0", ephemeral("listener"), other("tmp")),
		// Names whose ephemeral claim is the same as web-0's: both listed.
		pod("ns", "web", ephemeral("0-listener")),
		pod("ns", "db", named("data", "data-db")),
		// A volume naming its own ephemeral claim's name: listed once.
		pod("ns", "x", named("v", "x-v"), ephemeral("v")),
		pod("ns", "shared-1", named("l", "shared")),
		pod("ns", "shared-2", named("l", "shared")),
		pod("other", "web-0", ephemeral("listener")),
	}
	objs := make([]client.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, IndexPodClaim, PodNamedClaims).Build()

	for _, claim := range []string{"web-0-listener", "web-0-tmp", "data-db", "x-v", "shared", "web-listener", "db-data", "nobody", "-", "a--b"} {
		got, err := PodsOfClaim(t.Context(), c, "ns", claim)
		if err != nil {
			t.Fatalf("PodsOfClaim(%q): %v", claim, err)
		}
		var gotNames, want []string
		for _, p := range got {
			if p.Namespace != "ns" {
				t.Errorf("claim %q: pod %s/%s of another namespace", claim, p.Namespace, p.Name)
			}
			gotNames = append(gotNames, p.Name)
		}
		for _, p := range pods {
			if p.Namespace == "ns" && slices.Contains(names.PodClaimNames(p), claim) {
				want = append(want, p.Name)
			}
		}
		slices.Sort(gotNames)
		slices.Sort(want)
		if !slices.Equal(gotNames, want) {
			t.Errorf("PodsOfClaim(%q) = %v, want %v", claim, gotNames, want)
		}
	}
	for _, p := range pods {
		for _, v := range PodNamedClaims(p) {
			if slices.ContainsFunc(p.Spec.Volumes, func(vol corev1.Volume) bool {
				return vol.Ephemeral != nil && names.EphemeralClaimName(p.Name, vol.Name) == v && !slices.ContainsFunc(p.Spec.Volumes, func(n corev1.Volume) bool {
					return n.PersistentVolumeClaim != nil && n.PersistentVolumeClaim.ClaimName == v
				})
			}) {
				t.Errorf("pod %s: the index holds its ephemeral claim %q", p.Name, v)
			}
		}
	}
}
