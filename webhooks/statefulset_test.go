package webhooks

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func statefulSet(ns, name string, labels, annotations map[string]string) *appsv1.StatefulSet {
	sel := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}, {Name: "other", Image: "busybox"}},
					Containers: []corev1.Container{
						{Name: "app", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
						{Name: "sidecar", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
					},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

var optIn = map[string]string{v1alpha1.LabelEnabled: "true"}

// mounts renders the mounts of containers as "container:volume@path(ro)".
func mounts(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		for _, m := range c.VolumeMounts {
			ro := ""
			if m.ReadOnly {
				ro = "(ro)"
			}
			out = append(out, fmt.Sprintf("%s:%s@%s%s", c.Name, m.Name, m.MountPath, ro))
		}
	}
	return strings.Join(out, " ")
}

// templates renders claim templates as "name map[annotations] storageClass".
func templates(ts []corev1.PersistentVolumeClaim) string {
	var out []string
	for _, t := range ts {
		sc := ""
		if t.Spec.StorageClassName != nil {
			sc = *t.Spec.StorageClassName
		}
		out = append(out, fmt.Sprintf("%s %v %s", t.Name, t.Annotations, sc))
	}
	return strings.Join(out, " ")
}

func TestStatefulSetInjection(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	shared := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("external-unstable")}}
	if err := e.Client.Create(t.Context(), shared); err != nil {
		t.Fatal(err)
	}
	withMount := statefulSet(ns, "own-mount", optIn, nil)
	withMount.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: v1alpha1.MountPath}}
	withTemplate := statefulSet(ns, "own-template", optIn, nil)
	withTemplate.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.VolumeName, Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external-unstable"}},
		Spec:       claims.TemplateSpec(),
	}}
	initToo := statefulSet(ns, "init", optIn, map[string]string{v1alpha1.AnnotationListenerName: "shared"})
	initToo.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationMountInitContainers: "setup"}
	// As Stackable's operators write a broker StatefulSet: the pods share a
	// bootstrap Listener through an ephemeral volume mounted elsewhere, and
	// each replica needs a listener volume of its own at the listener path.
	withBootstrap := statefulSet(ns, "with-bootstrap", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"})
	bootstrap := claims.TemplateSpec()
	withBootstrap.Spec.Template.Spec.Volumes = append(withBootstrap.Spec.Template.Spec.Volumes, corev1.Volume{Name: "bootstrap", VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerName: "shared"}}, Spec: bootstrap}}}})
	withBootstrap.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "bootstrap", MountPath: "/stackable/listener-bootstrap"}}
	const listenerMounts = "app:listener@/stackable/listener(ro) sidecar:data@/data sidecar:listener@/stackable/listener(ro)"
	for _, tc := range []struct {
		name          string
		sts           *appsv1.StatefulSet
		wantTemplates string
		wantMounts    string
		wantInit      string
		wantLabel     bool
	}{
		{"class from the annotation", statefulSet(ns, "by-class", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}),
			"listener map[listeners.stackable.tech/listener-class:external-stable listeners.stackable.tech/statefulset-claim-template:listener] listeners.stackable.tech", listenerMounts, "", true},
		{"default class", statefulSet(ns, "by-default", optIn, nil),
			"listener map[listeners.stackable.tech/listener-class:cluster-internal listeners.stackable.tech/statefulset-claim-template:listener] listeners.stackable.tech", listenerMounts, "", true},
		{"shared listener, init container asks for the mount", initToo,
			"listener map[listeners.stackable.tech/listener-name:shared] listeners.stackable.tech", listenerMounts, "setup:listener@/stackable/listener(ro)", true},
		{"existing mount at the path is respected", withMount,
			"listener map[listeners.stackable.tech/listener-class:cluster-internal listeners.stackable.tech/statefulset-claim-template:listener] listeners.stackable.tech", "app:data@/stackable/listener " + listenerMounts[len("app:listener@/stackable/listener(ro) "):], "", true},
		{"user template is not duplicated", withTemplate,
			"listener map[listeners.stackable.tech/listener-class:external-unstable] listeners.stackable.tech", listenerMounts, "", true},
		{"a bootstrap volume the pods share is not the replicas' own", withBootstrap,
			"listener map[listeners.stackable.tech/listener-class:external-stable listeners.stackable.tech/statefulset-claim-template:listener] listeners.stackable.tech",
			"app:bootstrap@/stackable/listener-bootstrap " + listenerMounts, "", true},
		{"not opted in", statefulSet(ns, "plain", nil, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}),
			"", "sidecar:data@/data", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Client.Create(t.Context(), tc.sts); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got appsv1.StatefulSet
			if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(tc.sts), &got); err != nil {
				t.Fatal(err)
			}
			if s := templates(got.Spec.VolumeClaimTemplates); s != tc.wantTemplates {
				t.Errorf("claim templates:\n got: %s\nwant: %s", s, tc.wantTemplates)
			}
			if s := mounts(got.Spec.Template.Spec.Containers); s != tc.wantMounts {
				t.Errorf("container mounts:\n got: %s\nwant: %s", s, tc.wantMounts)
			}
			if s := mounts(got.Spec.Template.Spec.InitContainers); s != tc.wantInit {
				t.Errorf("init container mounts:\n got: %s\nwant: %s", s, tc.wantInit)
			}
			for _, key := range []string{v1alpha1.LabelEnabled, v1alpha1.LabelListenerVolume} {
				if l := got.Spec.Template.Labels[key] == "true"; l != tc.wantLabel {
					t.Errorf("pod template label %s = %v, want %v", key, l, tc.wantLabel)
				}
			}
		})
	}
}

// TestStatefulSetUpdateKeepsMount replaces the pod template the way
// `kubectl apply` of the original manifest does: the mount comes back and
// the claim templates stay as they were.
func TestStatefulSetUpdateKeepsMount(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	sts := statefulSet(ns, "web", optIn, nil)
	original := sts.Spec.Template.DeepCopy()
	if err := e.Client.Create(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	sts.Spec.Template = *original
	sts.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	if err := e.Client.Update(t.Context(), sts); err != nil {
		t.Fatalf("update: %v", err)
	}
	var got appsv1.StatefulSet
	if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(sts), &got); err != nil {
		t.Fatal(err)
	}
	if s := mounts(got.Spec.Template.Spec.Containers); s != "app:listener@/stackable/listener(ro) sidecar:data@/data sidecar:listener@/stackable/listener(ro)" {
		t.Errorf("mounts after update: %s", s)
	}
	if len(got.Spec.VolumeClaimTemplates) != 1 || got.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("update changed more than the mounts: %s, image %s", templates(got.Spec.VolumeClaimTemplates), got.Spec.Template.Spec.Containers[0].Image)
	}
	// The labels the webhook gave the template at creation come back too:
	// losing one would change the template and restart every pod.
	for _, key := range []string{v1alpha1.LabelEnabled, v1alpha1.LabelListenerVolume} {
		if got.Spec.Template.Labels[key] != "true" {
			t.Errorf("pod template lost label %s on update: %v", key, got.Spec.Template.Labels)
		}
	}
}

// TestStatefulSetEndToEnd lets kube-controller-manager's StatefulSet
// controller create the claims and pods of an opted-in StatefulSet: the
// claims carry the class and their template's name, and the pods the mount
// and no label of the operator's: each replica's Listener selects its pod
// by the StatefulSet controller's pod-name label, so the pod webhook had
// nothing to patch.
func TestStatefulSetEndToEnd(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	sts := statefulSet(ns, "kafka", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"})
	// No kubelet makes pods ready here; create all replicas at once.
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	if err := e.Client.Create(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		pod := fmt.Sprintf("kafka-%d", i)
		claimName := v1alpha1.VolumeName + "-" + pod
		eventually(t, "claim "+claimName, func() error {
			var c corev1.PersistentVolumeClaim
			if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claimName}, &c); err != nil {
				return err
			}
			if c.Annotations[v1alpha1.AnnotationListenerClass] != "external-stable" || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != v1alpha1.StorageClassName {
				return errorf("claim has annotations %v, storage class %v", c.Annotations, c.Spec.StorageClassName)
			}
			if got := claims.StatefulSetPod(c.Name, c.Annotations); got != pod {
				return errorf("claim's Listener would select pod %q by name (annotations %v), want %s", got, c.Annotations, pod)
			}
			return nil
		})
		eventually(t, "pod "+pod, func() error {
			var p corev1.Pod
			if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, &p); err != nil {
				return err
			}
			for k := range p.Labels {
				if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
					return errorf("pod labels %v: %s was patched in, want the pod selected by %s", p.Labels, k, v1alpha1.LabelStatefulSetPodName)
				}
			}
			if p.Labels[v1alpha1.LabelStatefulSetPodName] != pod || p.Labels[v1alpha1.LabelListenerVolume] != "true" {
				return errorf("pod labels %v lack %s=%s or the listener-volume label", p.Labels, v1alpha1.LabelStatefulSetPodName, pod)
			}
			if m := mounts(p.Spec.Containers); !strings.Contains(m, "app:listener@/stackable/listener(ro)") {
				return errorf("pod mounts: %s", m)
			}
			return nil
		})
	}
	if t.Failed() {
		t.Log(e.ControllerManagerLog())
	}
}

// TestStatefulSetServerSideApplyAgain: an opted-in StatefulSet applied
// server-side (kubectl apply --server-side, GitOps tools) can be applied
// again with a change: what the webhook added at creation (the claim
// template, its annotations, the mounts and labels) must not make the API
// server refuse the second apply for changing the immutable claim
// templates.
func TestStatefulSetServerSideApplyAgain(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	manifest := func(name, image, templates string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: %s
  namespace: %s
  labels: {listeners.stackable.tech/enabled: "true"}
  annotations: {listeners.stackable.tech/listener-class: external-stable}
spec:
  serviceName: %s
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: app, image: %s, ports: [{containerPort: 80}]}]
%s`, name, ns, name, name, name, image, templates))
	}
	for _, tc := range []struct{ name, templates string }{
		{"injected template", ""},
		{"own listener template", `  volumeClaimTemplates:
  - metadata: {name: listener, annotations: {listeners.stackable.tech/listener-class: external-unstable}}
    spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}
`},
		{"injected next to a data template", `  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`},
		{"own listener template selecting pods by name", `  volumeClaimTemplates:
  - metadata: {name: listener, annotations: {listeners.stackable.tech/listener-class: external-unstable, listeners.stackable.tech/statefulset-claim-template: listener}}
    spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			// Apply, apply the same again, then a new image.
			for _, image := range []string{"nginx:1", "nginx:1", "nginx:2"} {
				if out, err := e.Kubectl(t.Context(), manifest(name, image, tc.templates), "apply", "--server-side", "--field-manager=gitops", "-f", "-"); err != nil {
					t.Fatalf("server-side apply with image %s: %v\n%s", image, err, out)
				}
			}
			var got appsv1.StatefulSet
			if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Template.Spec.Containers[0].Image != "nginx:2" || !strings.Contains(templates(got.Spec.VolumeClaimTemplates), "listener map[") {
				t.Errorf("after the second apply: image %s, claim templates %s", got.Spec.Template.Spec.Containers[0].Image, templates(got.Spec.VolumeClaimTemplates))
			}
		})
	}
}
