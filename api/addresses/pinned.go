package addresses

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// PinnedNodes are the nodes a PersistentVolume's required node affinity pins
// it to through the listener hostname topology key (what the CSI controller
// writes for volumes of pinned classes, and what the existing operator's
// controller wrote).
func PinnedNodes(pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, expr := range term.MatchExpressions {
			if expr.Key == v1alpha1.TopologyKeyHostname && expr.Operator == corev1.NodeSelectorOpIn {
				out = append(out, expr.Values...)
			}
		}
	}
	return out
}

// PinnedNode is the one node a listener volume (a volume of this driver) is
// pinned to; "" when it is not a listener volume, is not pinned, or names
// several nodes.
func PinnedNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != v1alpha1.DriverName {
		return ""
	}
	if nodes := PinnedNodes(pv); len(nodes) == 1 {
		return nodes[0]
	}
	return ""
}
