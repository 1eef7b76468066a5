package addresses

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestPinned(t *testing.T) {
	pv := func(driver string, terms ...corev1.NodeSelectorRequirement) *corev1.PersistentVolume {
		p := &corev1.PersistentVolume{}
		if driver != "" {
			p.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver}
		}
		if len(terms) > 0 {
			p.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
			for _, e := range terms {
				p.Spec.NodeAffinity.Required.NodeSelectorTerms = append(p.Spec.NodeAffinity.Required.NodeSelectorTerms,
					corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{e}})
			}
		}
		return p
	}
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	for _, tc := range []struct {
		name  string
		pv    *corev1.PersistentVolume
		nodes []string
		node  string
	}{
		{"unpinned listener volume", pv(v1alpha1.DriverName), nil, ""},
		{"pinned listener volume", pv(v1alpha1.DriverName, in(v1alpha1.TopologyKeyHostname, "n1")), []string{"n1"}, "n1"},
		{"other keys ignored", pv(v1alpha1.DriverName, in("zone", "a"), in(v1alpha1.TopologyKeyHostname, "n1")), []string{"n1"}, "n1"},
		{"several nodes: no single pin", pv(v1alpha1.DriverName, in(v1alpha1.TopologyKeyHostname, "n1", "n2")), []string{"n1", "n2"}, ""},
		{"NotIn is no pin", pv(v1alpha1.DriverName, corev1.NodeSelectorRequirement{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}}), nil, ""},
		{"another driver's volume", pv("other.csi", in(v1alpha1.TopologyKeyHostname, "n1")), []string{"n1"}, ""},
		{"not a CSI volume", pv("", in(v1alpha1.TopologyKeyHostname, "n1")), []string{"n1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PinnedNodes(tc.pv); !slices.Equal(got, tc.nodes) {
				t.Errorf("PinnedNodes = %v, want %v", got, tc.nodes)
			}
			if got := PinnedNode(tc.pv); got != tc.node {
				t.Errorf("PinnedNode = %q, want %q", got, tc.node)
			}
		})
	}
}
