package takeover

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/podstate"
)

// lackingLabels are the labels of want (key=value) that labels lacks.
func lackingLabels(want, labels map[string]string) []string {
	var missing []string
	for k, v := range want {
		if labels[k] != v {
			missing = append(missing, k+"="+v)
		}
	}
	sort.Strings(missing)
	return missing
}

// selectorSwitchReady reports whether the Service may switch from its
// current selector to want: every pod the current selector matches, and
// that can still be an endpoint (not terminating, not finished), also
// matches want. Pods that never will (gone, finished) do not hold it up.
func selectorSwitchReady(want map[string]string, pods []corev1.Pod) (bool, string) {
	if p := waitingPod(want, pods); p != nil {
		return false, p.Name
	}
	return true, ""
}

// waitingPod is the first pod that holds up the switch to want (nil: none).
func waitingPod(want map[string]string, pods []corev1.Pod) *corev1.Pod {
	sel := labels.SelectorFromSet(want)
	for i := range pods {
		p := &pods[i]
		if !podstate.Running(p) {
			continue
		}
		if !sel.Matches(labels.Set(p.Labels)) {
			return p
		}
	}
	return nil
}

// takeoverLabels are the labels a pod with labels has to get before a
// Service may switch to selector sel: the operator's own selector labels it
// lacks, and the listener-volume label, so that the reconcilers' cache holds
// the pod from now on. A pod's other labels (the StatefulSet controller's
// pod name, the ones a Listener's extraPodSelectorLabels name) are not the
// operator's to write, and the pod label policy refuses them.
func takeoverLabels(sel, labels map[string]string) map[string]string {
	return claims.Missing(claims.SelectorPodLabels(sel), labels)
}

// EventServiceAdopted is recorded when a Service made by another operator
// switches to this operator's pod selector.
const EventServiceAdopted = "ServiceAdopted"
