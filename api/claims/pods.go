package claims

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// PodListener is a Listener that one of a pod's listener volumes uses, and
// the StatefulSet pod it selects by name ("" when it selects by label):
// the Listener's v1alpha1.AnnotationStatefulSetPod once it exists, the
// claim's StatefulSetPod until then.
type PodListener struct {
	Listener, StatefulSetPod string
}

// SelectedPod is the StatefulSet pod the Listener of a claim (named
// claimName, with these annotations) selects by name, if the claim says it
// does (StatefulSetPod): then the Listener's v1alpha1.AnnotationStatefulSetPod
// once it exists (it decides its Service's selector), the claim's until
// then (the Listener is made from it). listener reads the Listener's
// annotations, and whether it exists; it is called only when the claim
// says so. "" means by label: a pod labelled for a Listener that selects by
// name loses nothing.
func SelectedPod(claimName string, annotations map[string]string, listener func() (map[string]string, bool)) string {
	pod := StatefulSetPod(claimName, annotations)
	if pod == "" {
		return ""
	}
	if ann, found := listener(); found {
		return ann[v1alpha1.AnnotationStatefulSetPod]
	}
	return pod
}

// PodLabels are the labels the operator gives a pod (named podName, with
// labels podLabels) that mounts listener volumes of these Listeners: the
// listener-volume label, which puts it in the reconcilers' cache, and the
// pod selector label of each Listener whose Service does not select it by
// its StatefulSet pod name.
func PodLabels(podName string, podLabels map[string]string, listeners []PodListener) map[string]string {
	want := map[string]string{}
	EachPodLabel(podName, podLabels, listeners, func(k, v string) { want[k] = v })
	return want
}

// EachPodLabel calls f with each of PodLabels' labels once, in a stable
// order: the listener-volume label, then each Listener's in the order of
// listeners. The pod webhook patches them in that order without building
// the map (BenchmarkPodWebhookServing: 5 allocations a pod).
func EachPodLabel(podName string, podLabels map[string]string, listeners []PodListener, f func(k, v string)) {
	f(v1alpha1.LabelListenerVolume, "true")
	for i, l := range listeners {
		if l.Listener == "" || names.SelectsPodByName(l.StatefulSetPod, podName, podLabels) || labelledBefore(listeners[:i], l.Listener, podName, podLabels) {
			continue
		}
		f(names.PodSelectorLabel(l.Listener), v1alpha1.PodSelectorLabelValue)
	}
}

// labelledBefore reports whether one of listeners already gave the label of
// Listener name.
func labelledBefore(listeners []PodListener, name, podName string, podLabels map[string]string) bool {
	for _, l := range listeners {
		if l.Listener == name && !names.SelectsPodByName(l.StatefulSetPod, podName, podLabels) {
			return true
		}
	}
	return false
}

// SelectorPodLabels are the labels of a Service selector that the operator
// writes on pods (the pod selector labels), with the listener-volume label:
// what a pod must get before the Service switches to that selector. The
// others (the StatefulSet pod name, a Listener's extraPodSelectorLabels)
// are not the operator's to write.
func SelectorPodLabels(selector map[string]string) map[string]string {
	want := map[string]string{v1alpha1.LabelListenerVolume: "true"}
	for k, v := range selector {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
			want[k] = v
		}
	}
	return want
}

// Missing are the labels of want that labels lacks or has another value
// for.
func Missing(want, labels map[string]string) map[string]string {
	missing := map[string]string{}
	for k, v := range want {
		if labels[k] != v {
			missing[k] = v
		}
	}
	return missing
}

// NodeRequirement is the required node affinity expression that pins a
// pod to node, as the pod webhook writes it for a volume pinned there.
func NodeRequirement(node string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
}

// PinnedBy is the node an expression pins a pod to when it is one that
// NodeRequirement writes.
func PinnedBy(e corev1.NodeSelectorRequirement) (string, bool) {
	if e.Key == v1alpha1.TopologyKeyHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
		return e.Values[0], true
	}
	return "", false
}

// PinnedNodes are the nodes the required node affinity of a pod pins it
// to (what the pod webhook wrote, read back), in the order they appear.
func PinnedNodes(pod *corev1.Pod) []string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []string
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if n, ok := PinnedBy(e); ok {
				out = append(out, n)
			}
		}
	}
	return out
}
