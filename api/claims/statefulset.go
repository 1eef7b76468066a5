package claims

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// A per-claim Listener selects its pod by the StatefulSet controller's
// pod-name label only when that pod mounts the claim. A claim's annotations
// are the tenant's to write, so the claim alone proves nothing: what proves
// it is the StatefulSet. The StatefulSet controller names the claims it
// makes from claim template <template> "<template>-<pod>", and mounts the
// claim of that name (the one it made, or one that existed) in pod "<pod>",
// its pod "<statefulset>-<ordinal>". So when StatefulSet <statefulset>, in
// the claim's namespace, has the listener claim template <template> that
// itself carries the statefulset-claim-template annotation, pod "<pod>"
// mounts the claim; otherwise it does not (docs/reconcile.md).

// StatefulSetOfPod is the StatefulSet that would name its pod podName
// ("<statefulset>-<ordinal>", the ordinal in decimal without leading
// zeros), "" when podName is not such a name.
func StatefulSetOfPod(podName string) string {
	i := strings.LastIndexByte(podName, '-')
	if i <= 0 {
		return ""
	}
	ordinal := podName[i+1:]
	if ordinal == "" || len(ordinal) > 1 && ordinal[0] == '0' || strings.Trim(ordinal, "0123456789") != "" {
		return ""
	}
	return podName[:i]
}

// Ordinal is the ordinal of a StatefulSet pod's name (StatefulSetOfPod),
// -1 when it is not one or the ordinal is beyond any replica count
// (2^20).
func Ordinal(podName string) int {
	if StatefulSetOfPod(podName) == "" {
		return -1
	}
	i, err := strconv.Atoi(podName[strings.LastIndexByte(podName, '-')+1:])
	if err != nil || i > 1<<20 {
		return -1
	}
	return i
}

// ByName is whether the own Listener of a claim selects its pod by name.
type ByName struct {
	// Pod is the StatefulSet pod the Listener selects by its pod-name
	// label; "" when it selects the pods that mount the claim by the
	// per-Listener label.
	Pod string
	// Asked is the pod the claim asks for (StatefulSetPod); StatefulSet is
	// the StatefulSet whose pod that would be (StatefulSetOfPod, "" when
	// the name is not a StatefulSet pod's).
	Asked, StatefulSet string
	// Problem says why the claim does not get the pod it asks for, as a
	// clause ("" when it gets it, or asks for none).
	Problem string
}

// SelectedByName is whether the own Listener of the claim named claimName,
// with these annotations, selects its pod by name: the pod the claim asks
// for (StatefulSetPod), when sts, the StatefulSet named by StatefulSetOfPod
// read from the claim's namespace (nil: there is none), has the listener
// claim template the claim names, annotated with its own name. Callers
// read sts only when the claim asks (StatefulSetPod is not "").
func SelectedByName(claimName string, annotations map[string]string, sts *appsv1.StatefulSet) ByName {
	asked := StatefulSetPod(claimName, annotations)
	if asked == "" {
		return ByName{}
	}
	out := ByName{Asked: asked, StatefulSet: StatefulSetOfPod(asked)}
	tmpl := annotations[v1alpha1.AnnotationStatefulSetClaimTemplate]
	switch {
	case out.StatefulSet == "":
		out.Problem = fmt.Sprintf("%q is not the name of a StatefulSet's pod (<statefulset>-<ordinal>)", asked)
	case sts == nil || sts.Name != out.StatefulSet:
		out.Problem = fmt.Sprintf("StatefulSet %q does not exist in this namespace", out.StatefulSet)
	case !hasListenerTemplate(sts, tmpl):
		out.Problem = fmt.Sprintf("StatefulSet %q has no listener claim template %q annotated %s: %s", out.StatefulSet, tmpl, v1alpha1.AnnotationStatefulSetClaimTemplate, tmpl)
	default:
		out.Pod = asked
	}
	return out
}

// hasListenerTemplate reports whether sts has a listener claim template
// named tmpl that names itself in the statefulset-claim-template
// annotation, as the StatefulSet webhook injects it.
func hasListenerTemplate(sts *appsv1.StatefulSet, tmpl string) bool {
	for i := range sts.Spec.VolumeClaimTemplates {
		t := &sts.Spec.VolumeClaimTemplates[i]
		if t.Name == tmpl && t.Annotations[v1alpha1.AnnotationStatefulSetClaimTemplate] == tmpl && Requested(t.Annotations, t.Spec.StorageClassName) {
			return true
		}
	}
	return false
}

// Refusal says, for the claim named claimName that asks for a pod it does
// not get (Problem is set), what is wrong and how to fix it, as the end of a
// sentence that begins with the claim's annotation.
func (b ByName) Refusal(claimName string) string {
	return fmt.Sprintf("asks that the claim's own Listener select pod %q by its %s label, which only a claim that a StatefulSet makes from its listener claim template may ask (that pod mounts it); but %s, so pod %q does not mount claim %s. "+
		"Remove the annotation (kubectl annotate pvc %s %s-): the Listener then selects the pods that mount the claim",
		b.Asked, v1alpha1.LabelStatefulSetPodName, b.Problem, b.Asked, claimName, claimName, v1alpha1.AnnotationStatefulSetClaimTemplate)
}
