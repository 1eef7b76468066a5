package pod

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// operatorLabels renders the labels of a pod that the operator sets, sorted.
func operatorLabels(p *corev1.Pod) string {
	var out []string
	for k, v := range p.Labels {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) || k == v1alpha1.LabelListenerVolume {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestRelabelScan: pods created without the pod webhook (as while it is
// down) are found by the leader's scan of the API server and labelled, so
// that the reconcilers' cache, which selects pods by the listener-volume
// label, sees them; other pods are left alone.
func TestRelabelScan(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	other := reconciletest.ListenerClaim(ns, "data", nil)
	other.Spec.StorageClassName = ptr.To("standard")
	testenv.Create(t, ctx, c, reconciletest.ListenerClaim(ns, "addr", map[string]string{v1alpha1.AnnotationListenerClass: class.Name}), other)

	pod := func(name string, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "x"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example"}}, Volumes: vols},
		}
	}
	ephemeral := corev1.Volume{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class.Name}},
			Spec:       reconciletest.ListenerClaim(ns, "", nil).Spec,
		},
	}}}
	lv := v1alpha1.LabelListenerVolume + "=true"
	theirKey := v1alpha1.PodSelectorLabelPrefix + "0a1b2c"
	foreign := pod("f")
	foreign.Labels[theirKey] = "web"
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"a listener claim", pod("a", reconciletest.ClaimVolume("l", "addr")), names.PodSelectorLabel(names.ClaimListenerName("addr")) + "=true," + lv},
		{"a claim that does not exist yet", pod("b", reconciletest.ClaimVolume("l", "later")), lv},
		{"an ephemeral listener volume whose claim is not made yet", pod("c", ephemeral), lv},
		{"another claim", pod("d", reconciletest.ClaimVolume("d", "data")), ""},
		{"no volumes", pod("e"), ""},
		// Into the cache for the takeover of the Service that selects it.
		{"another operator's listener label", foreign, theirKey + "=web," + lv},
	}
	for _, tc := range cases {
		testenv.Create(t, ctx, c, tc.pod)
	}
	// Created last and sorting last: once it is labelled, a scan that
	// listed every other pod has finished with them.
	testenv.Create(t, ctx, c, pod("zz-sentinel", reconciletest.ClaimVolume("l", "addr")))
	testenv.Converges(t, "the sentinel pod labelled", func() error {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "zz-sentinel"}, &p); err != nil {
			return err
		}
		if p.Labels[v1alpha1.LabelListenerVolume] != "true" {
			return fmt.Errorf("labels %v", p.Labels)
		}
		return nil
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p corev1.Pod
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.pod), &p); err != nil {
				t.Fatal(err)
			}
			if got := operatorLabels(&p); got != tc.want {
				t.Errorf("labels the operator set:\n got: %s\nwant: %s", got, tc.want)
			}
			if p.Labels["app"] != "x" {
				t.Errorf("the pod's own label changed: %v", p.Labels)
			}
		})
	}
}
