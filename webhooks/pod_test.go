package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func pod(ns, name string, labels map[string]string, volumes ...corev1.Volume) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}, {Name: "sidecar", Image: "busybox"}},
			Volumes:    volumes,
		},
	}
	if name == "" {
		p.GenerateName = "p-"
	}
	return p
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func ephemeral(name string, annotations map[string]string) corev1.Volume {
	v := ephemeralVolume(annotations)
	v.Name = name
	return v
}

// pinnedClaim creates a PersistentVolume of the listener driver pinned to
// node and a claim bound to it.
func pinnedClaim(t testing.TB, ns, name, node string) {
	t.Helper()
	e := testenv.Require(t, env)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName:       v1alpha1.StorageClassName,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: ns + "/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if err := e.Client.Create(t.Context(), pv); err != nil {
		t.Fatal(err)
	}
	c := listenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, ptr(v1alpha1.StorageClassName))
	c.Spec.VolumeName = pv.Name
	if err := e.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// affinity renders the required node selector terms as "key in [values] & ... | ...".
func affinity(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	var terms []string
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			exprs = append(exprs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		terms = append(terms, strings.Join(exprs, " & "))
	}
	return strings.Join(terms, " | ")
}

// listenerLabels renders the pod selector labels of a pod, sorted.
func listenerLabels(p *corev1.Pod) string {
	var out []string
	for k, v := range p.Labels {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
			out = append(out, k+"="+v)
		}
	}
	return joinSorted(out)
}

func TestPodMutation(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	sc := ptr(v1alpha1.StorageClassName)
	for _, c := range []*corev1.PersistentVolumeClaim{
		listenerClaim(ns, "per-claim", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, sc),
		listenerClaim(ns, "by-name", map[string]string{v1alpha1.AnnotationListenerName: "shared"}, sc),
		listenerClaim(ns, "data", nil, ptr("standard")),
	} {
		if c.Annotations[v1alpha1.AnnotationListenerName] != "" {
			l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
			if err := e.Client.Create(t.Context(), l); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Client.Create(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	pinnedClaim(t, ns, "pinned", "node-1")
	pinnedClaim(t, ns, "pinned-elsewhere", "node-2")

	withAffinity := pod(ns, "with-affinity", nil, claimVolume("l", "pinned"))
	withAffinity.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}},
		},
	}}}
	mountedOnce := pod(ns, "mounted-once", nil, claimVolume("addr", "per-claim"))
	mountedOnce.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "addr", MountPath: v1alpha1.MountPath}}
	annotatedBare := pod(ns, "bare-shared", optIn)
	annotatedBare.Annotations = map[string]string{v1alpha1.AnnotationListenerName: "shared"}

	label := func(listener string) string { return names.PodSelectorLabel(listener) + "=true" }
	for _, tc := range []struct {
		name         string
		pod          *corev1.Pod
		wantLabels   string
		wantAffinity string
		wantMounts   string
		wantVolumes  string
		// wantCached: the pod gets the label that puts it in the
		// controller's cache.
		wantCached bool
	}{
		{"claim with a class", pod(ns, "a", nil, claimVolume("l", "per-claim")), label("per-claim"), "", "", "l", true},
		{"claim of a shared listener", pod(ns, "b", nil, claimVolume("l", "by-name"), claimVolume("d", "data")), label("shared"), "", "", "l d", true},
		{"ephemeral volume", pod(ns, "c", nil, ephemeral("addr", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"})),
			label("c-addr"), "", "", "addr", true},
		{"ephemeral volume, generateName: left to the reconciler", pod(ns, "", nil, ephemeral("addr", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"})),
			"", "", "", "addr", true},
		{"ephemeral volume of a shared listener, generateName", pod(ns, "", nil, ephemeral("addr", map[string]string{v1alpha1.AnnotationListenerName: "shared"})),
			label("shared"), "", "", "addr", true},
		{"pinned volume", pod(ns, "d", nil, claimVolume("l", "pinned")), label("pinned"), "listeners.stackable.tech/hostname In [node-1]", "", "l", true},
		{"pinned volume, existing terms", withAffinity, label("pinned"),
			"zone In [a] & listeners.stackable.tech/hostname In [node-1] | listeners.stackable.tech/hostname In [node-1]", "", "l", true},
		{"two pinned volumes", pod(ns, "e", nil, claimVolume("l", "pinned"), claimVolume("m", "pinned-elsewhere")), label("pinned-elsewhere") + ", " + label("pinned"),
			"listeners.stackable.tech/hostname In [node-1] & listeners.stackable.tech/hostname In [node-2]", "", "l m", true},
		{"mount spread to the other containers", mountedOnce, label("per-claim"), "",
			"app:addr@/stackable/listener sidecar:addr@/stackable/listener(ro)", "addr", true},
		{"opted-in bare pod", pod(ns, "bare", optIn), label("bare-listener"), "",
			"app:listener@/stackable/listener(ro) sidecar:listener@/stackable/listener(ro)", "listener", true},
		{"opted-in bare pod of a shared listener", annotatedBare, label("shared"), "",
			"app:listener@/stackable/listener(ro) sidecar:listener@/stackable/listener(ro)", "listener", true},
		{"unrelated pod", pod(ns, "f", nil, claimVolume("d", "data")), "", "", "", "d", false},
		{"claim that does not exist yet", pod(ns, "g", nil, claimVolume("d", "later")), "", "", "", "d", true},
		{"pod without volumes", pod(ns, "h", nil), "", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Client.Create(t.Context(), tc.pod); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got corev1.Pod
			if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(tc.pod), &got); err != nil {
				t.Fatal(err)
			}
			if s := listenerLabels(&got); s != tc.wantLabels {
				t.Errorf("labels:\n got: %s\nwant: %s", s, tc.wantLabels)
			}
			if cached := got.Labels[v1alpha1.LabelListenerVolume] == "true"; cached != tc.wantCached {
				t.Errorf("label %s: got %t, want %t", v1alpha1.LabelListenerVolume, cached, tc.wantCached)
			}
			if s := affinity(&got); s != tc.wantAffinity {
				t.Errorf("node affinity:\n got: %s\nwant: %s", s, tc.wantAffinity)
			}
			if s := mounts(got.Spec.Containers); s != tc.wantMounts {
				t.Errorf("mounts:\n got: %s\nwant: %s", s, tc.wantMounts)
			}
			var vols []string
			for _, v := range got.Spec.Volumes {
				vols = append(vols, v.Name)
			}
			if s := strings.Join(vols, " "); s != tc.wantVolumes {
				t.Errorf("volumes: got %s, want %s", s, tc.wantVolumes)
			}
		})
	}
}

func TestPodDenials(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	inline := corev1.Volume{Name: "addr", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: v1alpha1.DriverName}}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"inline CSI volume", pod(ns, "a", nil, inline),
			`admission webhook "pods.mutate.listeners.stackable.tech" denied the request: Pod "a" is invalid: spec.volumes[0].csi.driver: Invalid value: "listeners.stackable.tech": inline CSI volumes of the listener driver are not supported; use a generic ephemeral volume instead: ephemeral: {volumeClaimTemplate: {metadata: {annotations: {listeners.stackable.tech/listener-class: <class>}}, spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}}}`},
		{"ephemeral volume of an unknown class", pod(ns, "b", nil, ephemeral("addr", map[string]string{v1alpha1.AnnotationListenerClass: "foo"})),
			`Pod "b" is invalid: spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Client.Create(t.Context(), tc.pod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// pathTestSidecarInjector serves sidecarInjector, a stand-in for a service
// mesh or agent webhook that adds a container after ours ran.
const pathTestSidecarInjector = "/test-inject-sidecar"

// sidecarInjector adds a container named "injected" to pods that lack it.
type sidecarInjector struct{}

func (sidecarInjector) Handle(_ context.Context, req admission.Request) admission.Response {
	var p corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	for _, c := range p.Spec.Containers {
		if c.Name == "injected" {
			return admission.Allowed("")
		}
	}
	return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/spec/containers/-",
		Value: corev1.Container{Name: "injected", Image: "busybox"}})
}

// TestPodReinvocation registers a second mutating webhook that injects a
// container into labelled pods. Its configuration sorts after ours, so the
// API server calls it after our pod webhook, and calls ours again
// (reinvocationPolicy: IfNeeded), which mounts the listener volume in the
// injected container too.
func TestPodReinvocation(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	wo := &e.Environment.WebhookInstallOptions
	url := fmt.Sprintf("https://%s%s", net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort)), pathTestSidecarInjector)
	injector := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-test-sidecar-injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "sidecar.test.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: wo.LocalServingCAData},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"test-inject-sidecar": "true"}},
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := e.Client.Create(t.Context(), injector); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(t.Context()), injector) })
	labels := map[string]string{v1alpha1.LabelEnabled: "true", "test-inject-sidecar": "true"}
	eventually(t, "API server calls the injector", func() error {
		p := pod(ns, "probe", labels)
		if err := e.Client.Create(t.Context(), p, client.DryRunAll); err != nil {
			return err
		}
		if len(p.Spec.Containers) != 3 {
			return errorf("containers: %d", len(p.Spec.Containers))
		}
		return nil
	})
	p := pod(ns, "meshed", labels)
	if err := e.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	want := "app:listener@/stackable/listener(ro) sidecar:listener@/stackable/listener(ro) injected:listener@/stackable/listener(ro)"
	if got := mounts(p.Spec.Containers); got != want {
		t.Errorf("mounts:\n got: %s\nwant: %s", got, want)
	}
}
