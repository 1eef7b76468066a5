package claims

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestStatefulSetOfPod: the StatefulSet a pod name belongs to.
func TestStatefulSetOfPod(t *testing.T) {
	for pod, want := range map[string]string{
		"web-0": "web", "kafka-broker-12": "kafka-broker", "db-10": "db",
		"web": "", "web-": "", "-0": "", "web-01": "", "web-x": "", "web-1a": "",
	} {
		if got := StatefulSetOfPod(pod); got != want {
			t.Errorf("StatefulSetOfPod(%q) = %q, want %q", pod, got, want)
		}
	}
}

// TestSelectedByName: a claim's own Listener selects the pod the claim
// asks for only when the StatefulSet of that pod has the listener claim
// template the claim names (so that pod mounts the claim); otherwise the
// problem says why.
func TestSelectedByName(t *testing.T) {
	const tmplKey = v1alpha1.AnnotationStatefulSetClaimTemplate
	sc := v1alpha1.StorageClassName
	template := func(name string, ann map[string]string, sc *string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: sc}}
	}
	sts := func(name string, templates ...corev1.PersistentVolumeClaim) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: templates}}
	}
	ours := template("x", map[string]string{tmplKey: "x", v1alpha1.AnnotationListenerClass: "c"}, &sc)
	ann := map[string]string{tmplKey: "x", v1alpha1.AnnotationListenerClass: "c"}
	for _, tc := range []struct {
		name, claim string
		ann         map[string]string
		sts         *appsv1.StatefulSet
		pod         string
		problem     string
	}{
		{"made from the template", "x-db-0", ann, sts("db", ours), "db-0", ""},
		{"template with the class annotation only", "x-db-0", ann, sts("db", template("x", map[string]string{tmplKey: "x", v1alpha1.AnnotationListenerClass: "c"}, nil)), "db-0", ""},
		{"asks for nothing", "x-db-0", map[string]string{v1alpha1.AnnotationListenerClass: "c"}, nil, "", ""},
		{"no StatefulSet", "x-db-0", ann, nil, "", `StatefulSet "db" does not exist in this namespace`},
		{"another StatefulSet", "x-db-0", ann, sts("web", ours), "", `StatefulSet "db" does not exist in this namespace`},
		{"no such template", "x-db-0", ann, sts("db", template("data", nil, ptr("standard"))), "", `StatefulSet "db" has no listener claim template "x" annotated listeners.stackable.tech/statefulset-claim-template: x`},
		{"template not annotated", "x-db-0", ann, sts("db", template("x", map[string]string{v1alpha1.AnnotationListenerClass: "c"}, &sc)), "", `has no listener claim template "x"`},
		{"template of another storage class", "x-db-0", ann, sts("db", template("x", map[string]string{tmplKey: "x"}, ptr("standard"))), "", `has no listener claim template "x"`},
		{"not a pod name", "x-db", ann, sts("db", ours), "", `"db" is not the name of a StatefulSet's pod (<statefulset>-<ordinal>)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectedByName(tc.claim, tc.ann, tc.sts)
			if got.Pod != tc.pod || !strings.Contains(got.Problem, tc.problem) || (tc.problem == "") != (got.Problem == "") {
				t.Errorf("SelectedByName = %+v, want pod %q, problem %q", got, tc.pod, tc.problem)
			}
		})
	}
	refusal := SelectedByName("x-db-0", ann, nil).Refusal("x-db-0")
	for _, want := range []string{`select pod "db-0" by its statefulset.kubernetes.io/pod-name label`, `StatefulSet "db" does not exist in this namespace, so pod "db-0" does not mount claim x-db-0`,
		"kubectl annotate pvc x-db-0 listeners.stackable.tech/statefulset-claim-template-"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal %q lacks %q", refusal, want)
		}
	}
}
