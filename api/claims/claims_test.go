package claims

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func ptr(s string) *string { return &s }

// TestRequested: moved from api/validation (TestIsListenerClaim).
func TestRequested(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		sc   *string
		want bool
	}{
		{nil, nil, false},
		{nil, ptr("standard"), false},
		{nil, ptr(v1alpha1.StorageClassName), true},
		{map[string]string{v1alpha1.AnnotationListenerName: "x"}, nil, true},
		{map[string]string{v1alpha1.AnnotationListenerClass: "x"}, ptr("standard"), true},
	} {
		if got := Requested(tc.ann, tc.sc); got != tc.want {
			t.Errorf("Requested(%v, %v) = %v", tc.ann, tc.sc, got)
		}
	}
}

// TestOfClaim: which Listener a stored claim uses, for every shape of its
// annotations and storage class.
func TestOfClaim(t *testing.T) {
	const (
		class = v1alpha1.AnnotationListenerClass
		name  = v1alpha1.AnnotationListenerName
	)
	for _, tc := range []struct {
		name       string
		sc         *string
		ann        map[string]string
		want       Use
		isListener bool
		problem    string
	}{
		{"class", ptr(v1alpha1.StorageClassName), map[string]string{class: "external"}, Use{Listener: "data", Own: true, Class: "external"}, true, ""},
		{"shared", ptr(v1alpha1.StorageClassName), map[string]string{name: "kafka"}, Use{Listener: "kafka"}, true, ""},
		{"both: the name wins", ptr(v1alpha1.StorageClassName), map[string]string{class: "external", name: "kafka"}, Use{Listener: "kafka"}, true, ""},
		{"empty name, class", ptr(v1alpha1.StorageClassName), map[string]string{class: "external", name: ""}, Use{Listener: "data", Own: true, Class: "external"}, true, ""},
		{"empty class", ptr(v1alpha1.StorageClassName), map[string]string{class: ""}, Use{}, true, "has an empty listeners.stackable.tech/listener-class annotation"},
		{"empty class and name", ptr(v1alpha1.StorageClassName), map[string]string{class: "", name: ""}, Use{}, true, "has an empty listeners.stackable.tech/listener-class annotation"},
		{"neither", ptr(v1alpha1.StorageClassName), nil, Use{}, true, "has neither the listeners.stackable.tech/listener-class nor the listeners.stackable.tech/listener-name annotation"},
		{"other storage class", ptr("standard"), map[string]string{class: "external"}, Use{}, false, ""},
		{"no storage class", nil, map[string]string{name: "kafka"}, Use{}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Annotations: tc.ann}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: tc.sc}}
			got, ok := OfClaim(pvc)
			if ok != tc.isListener {
				t.Errorf("is a listener claim: %v, want %v", ok, tc.isListener)
			}
			if !strings.HasPrefix(got.Problem, tc.problem) || (tc.problem == "") != (got.Problem == "") {
				t.Errorf("problem %q, want one starting %q", got.Problem, tc.problem)
			}
			got.Problem = ""
			if got != tc.want {
				t.Errorf("OfClaim = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestEmptyClassProblemSaysTheFix: the message names the annotation and
// the command that fixes the claim.
func TestEmptyClassProblemSaysTheFix(t *testing.T) {
	got := Of("web-0", map[string]string{v1alpha1.AnnotationListenerClass: ""}).Problem
	want := "has an empty listeners.stackable.tech/listener-class annotation (admission refuses it; the claim got in while the webhooks were down), so it has no Listener: " +
		"name a ListenerClass in it (kubectl annotate --overwrite pvc web-0 listeners.stackable.tech/listener-class=<class>) or share a Listener with listeners.stackable.tech/listener-name"
	if got != want {
		t.Errorf("problem\n%s\nwant\n%s", got, want)
	}
}

// TestPodLabels: the listener-volume label and the selector label of each
// Listener that does not select the pod by its StatefulSet pod name.
func TestPodLabels(t *testing.T) {
	stsLabels := map[string]string{v1alpha1.LabelStatefulSetPodName: "web-0"}
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		listeners []PodListener
		want      map[string]string
	}{
		{"no listener known yet", nil, nil, map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		{"two listeners", nil, []PodListener{{Listener: "a"}, {Listener: "b"}}, map[string]string{
			v1alpha1.LabelListenerVolume: "true", "listener.stackable.tech/mnt.a": "true", "listener.stackable.tech/mnt.b": "true"}},
		{"selected by name", stsLabels, []PodListener{{Listener: "listener-web-0", StatefulSetPod: "web-0"}}, map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		{"selects another pod by name", stsLabels, []PodListener{{Listener: "listener-web-1", StatefulSetPod: "web-1"}}, map[string]string{
			v1alpha1.LabelListenerVolume: "true", "listener.stackable.tech/mnt.listener-web-1": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodLabels("web-0", tc.labels, tc.listeners); !maps.Equal(got, tc.want) {
				t.Errorf("PodLabels = %v, want %v", got, tc.want)
			}
		})
	}
	// The pod webhook patches them in EachPodLabel's order: each once, the
	// listener-volume label first, then the Listeners' as the volumes list
	// them (a Listener mounted twice, once by name and once by label,
	// labels the pod once).
	var order []string
	EachPodLabel("web-0", stsLabels, []PodListener{{Listener: "b"}, {Listener: "listener-web-0", StatefulSetPod: "web-0"}, {Listener: "a"},
		{Listener: "b"}, {Listener: "c", StatefulSetPod: "web-0"}, {Listener: "c"}}, func(k, v string) { order = append(order, k+"="+v) })
	if want := []string{v1alpha1.LabelListenerVolume + "=true", "listener.stackable.tech/mnt.b=true", "listener.stackable.tech/mnt.a=true",
		"listener.stackable.tech/mnt.c=true"}; !slices.Equal(order, want) {
		t.Errorf("EachPodLabel gives %v, want %v", order, want)
	}
	have := map[string]string{v1alpha1.LabelListenerVolume: "true", "listener.stackable.tech/mnt.a": "false"}
	want := map[string]string{"listener.stackable.tech/mnt.a": "true"}
	if got := Missing(PodLabels("p", have, []PodListener{{Listener: "a"}}), have); !maps.Equal(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
	sel := map[string]string{"listener.stackable.tech/mnt.a": "true", "app": "web", v1alpha1.LabelStatefulSetPodName: "web-0"}
	if got, want := SelectorPodLabels(sel), map[string]string{"listener.stackable.tech/mnt.a": "true", v1alpha1.LabelListenerVolume: "true"}; !maps.Equal(got, want) {
		t.Errorf("SelectorPodLabels = %v, want %v (only the operator's labels)", got, want)
	}
}

// TestPinnedNodesReadsWhatIsWritten: PinnedNodes reads back the
// requirements NodeRequirement writes, and only those.
func TestPinnedNodesReadsWhatIsWritten(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
				NodeRequirement("node-1"),
				{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-2"}},
			},
		}}},
	}}}}
	if got := PinnedNodes(pod); len(got) != 1 || got[0] != "node-1" {
		t.Errorf("PinnedNodes = %v, want [node-1]", got)
	}
	if got := PinnedNodes(&corev1.Pod{}); got != nil {
		t.Errorf("PinnedNodes of a pod without affinity = %v", got)
	}
}

// TestTemplates: what the webhooks inject.
func TestTemplates(t *testing.T) {
	const (
		class = v1alpha1.AnnotationListenerClass
		name  = v1alpha1.AnnotationListenerName
	)
	for _, tc := range []struct {
		ann, want map[string]string
	}{
		{map[string]string{name: "kafka", class: "x"}, map[string]string{name: "kafka"}},
		{map[string]string{class: "x", "other": "y"}, map[string]string{class: "x"}},
		{nil, map[string]string{class: "default"}},
		{map[string]string{class: ""}, map[string]string{class: "default"}},
	} {
		if got := OptInAnnotations(tc.ann, "default"); !maps.Equal(got, tc.want) {
			t.Errorf("OptInAnnotations(%v) = %v, want %v", tc.ann, got, tc.want)
		}
	}
	if got := StatefulSetTemplateAnnotations(map[string]string{class: "x"}); got[v1alpha1.AnnotationStatefulSetClaimTemplate] != v1alpha1.VolumeName {
		t.Errorf("a per-claim template names itself: %v", got)
	}
	if got := StatefulSetTemplateAnnotations(map[string]string{name: "kafka"}); len(got) != 1 {
		t.Errorf("a shared template is left as it is: %v", got)
	}
	if got := TemplateSpec(); !IsListenerStorageClass(got.StorageClassName) {
		t.Errorf("TemplateSpec has storage class %v", got.StorageClassName)
	}
	for _, tc := range []struct {
		ann       map[string]string
		pod, want string
	}{
		{map[string]string{name: "kafka"}, "", "kafka"},
		{map[string]string{class: "x"}, "web-0", "web-0-listener"},
		{nil, "web-0", "web-0-listener"},
		{map[string]string{class: "x"}, "", ""},
	} {
		if got := EphemeralListener(tc.ann, tc.pod, "listener"); got != tc.want {
			t.Errorf("EphemeralListener(%v, %q) = %q, want %q", tc.ann, tc.pod, got, tc.want)
		}
	}
}

// TestStatefulSetPod: which claims' Listeners select their pod by
// the StatefulSet pod-name label, and the pod.
func TestStatefulSetPod(t *testing.T) {
	const tmpl = "listeners.stackable.tech/statefulset-claim-template"
	for _, tc := range []struct {
		name, claim string
		ann         map[string]string
		want        string
	}{
		{"replica of an annotated template", "listener-web-0", map[string]string{tmpl: "listener"}, "web-0"},
		{"template name with dashes", "my-listener-kafka-broker-2", map[string]string{tmpl: "my-listener"}, "kafka-broker-2"},
		{"no annotation: an older StatefulSet", "listener-web-0", nil, ""},
		{"shared Listener", "listener-web-0", map[string]string{tmpl: "listener", "listeners.stackable.tech/listener-name": "shared"}, ""},
		{"claim not made from that template", "data-web-0", map[string]string{tmpl: "listener"}, ""},
		{"nothing after the template", "listener-", map[string]string{tmpl: "listener"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatefulSetPod(tc.claim, tc.ann); got != tc.want {
				t.Errorf("StatefulSetPod(%q, %v) = %q, want %q", tc.claim, tc.ann, got, tc.want)
			}
		})
	}
}

// TestWillOwnListener: at admission, a claim names a shared Listener or
// gets one of its own (a class, or the default).
func TestWillOwnListener(t *testing.T) {
	for _, tc := range []struct {
		ann          map[string]string
		defaultClass string
		want         bool
	}{
		{map[string]string{v1alpha1.AnnotationListenerClass: "x"}, "", true},
		{map[string]string{v1alpha1.AnnotationListenerName: "kafka"}, "d", false},
		{map[string]string{v1alpha1.AnnotationListenerName: "kafka", v1alpha1.AnnotationListenerClass: "x"}, "", false},
		{nil, "d", true},
		{nil, "", false},
	} {
		if got := WillOwnListener(tc.ann, tc.defaultClass); got != tc.want {
			t.Errorf("WillOwnListener(%v, %q) = %v, want %v", tc.ann, tc.defaultClass, got, tc.want)
		}
	}
}

// TestSetsStorageClass: the claim webhook completes a missing or default
// storage class, and asks whether a class is the default only when it must.
func TestSetsStorageClass(t *testing.T) {
	isDefault := func(sc string) (bool, error) {
		if sc == "" || sc == v1alpha1.StorageClassName {
			t.Errorf("asked whether %q is the default", sc)
		}
		return sc == "standard", nil
	}
	for _, tc := range []struct {
		sc   *string
		want bool
	}{
		{nil, true},
		{ptr(v1alpha1.StorageClassName), false},
		{ptr(""), false},
		{ptr("standard"), true},
		{ptr("fast"), false},
	} {
		if got, err := SetsStorageClass(tc.sc, isDefault); err != nil || got != tc.want {
			t.Errorf("SetsStorageClass(%v) = %v, %v; want %v", tc.sc, got, err, tc.want)
		}
	}
}

// TestBound: a bound volume keeps the Listener recorded on it; a volume of
// another claim or driver, or with nothing recorded, changes nothing.
func TestBound(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "u1"}}
	shared := Use{Listener: "kafka"}
	pv := func(uid, driver, recorded string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelVolumeListener: recorded}},
			Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{UID: types.UID(uid)},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver}}}}
	}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want Use
	}{
		{"not bound", nil, shared},
		{"nothing recorded", pv("u1", v1alpha1.DriverName, ""), shared},
		{"recorded the same", pv("u1", v1alpha1.DriverName, "kafka"), shared},
		{"recorded its own", pv("u1", v1alpha1.DriverName, "data"), Use{Listener: "data", Own: true}},
		{"recorded another shared one", pv("u1", v1alpha1.DriverName, "zk"), Use{Listener: "zk"}},
		{"an earlier claim's volume", pv("u0", v1alpha1.DriverName, "data"), shared},
		{"another driver's volume", pv("u1", "other.csi", "data"), shared},
	} {
		if got := Bound(pvc, shared, tc.pv); got != tc.want {
			t.Errorf("%s: Bound = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestSelectedPod: the Listener decides once it exists, and is read only
// when the claim says its Listener selects by name.
func TestSelectedPod(t *testing.T) {
	ann := map[string]string{v1alpha1.AnnotationStatefulSetClaimTemplate: "listener", v1alpha1.AnnotationListenerClass: "x"}
	missing := func() (map[string]string, bool) { return nil, false }
	byLabel := func() (map[string]string, bool) { return map[string]string{}, true }
	byName := func() (map[string]string, bool) {
		return map[string]string{v1alpha1.AnnotationStatefulSetPod: "web-0"}, true
	}
	unread := func() (map[string]string, bool) {
		t.Error("read the Listener of a claim that selects by label")
		return nil, false
	}
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		listener func() (map[string]string, bool)
		want     string
	}{
		{"Listener not made yet", ann, missing, "web-0"},
		{"Listener selects by label", ann, byLabel, ""},
		{"Listener selects by name", ann, byName, "web-0"},
		{"claim of an older template", map[string]string{v1alpha1.AnnotationListenerClass: "x"}, unread, ""},
	} {
		if got := SelectedPod("listener-web-0", tc.ann, tc.listener); got != tc.want {
			t.Errorf("%s: SelectedPod = %q, want %q", tc.name, got, tc.want)
		}
	}
}
