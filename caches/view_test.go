package caches

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// pendingPod is a listener pod of a StatefulSet as the API server has it
// before it is scheduled, with much that TrimPod drops.
func pendingPod() *corev1.Pod {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-0", GenerateName: "kafka-",
			Labels: map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.PodSelectorLabelPrefix + "kafka-0": "true",
				v1alpha1.LabelStatefulSetPodName: "kafka-0", "app": "kafka"},
			Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external", annotationLastApplied: "{}"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "kafka", Image: "i", Ports: []corev1.ContainerPort{{Name: "kafka", ContainerPort: 9092, Protocol: corev1.ProtocolTCP}}},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "listener-kafka-0", ReadOnly: true}}},
				{Name: "bootstrap", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}}}}}},
			},
			Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required},
				PodAntiAffinity: &corev1.PodAntiAffinity{},
			},
		},
	}
}

// TestPodsThroughTheView: through the reconcilers' view, pods are read,
// listed (by label and by a field index, in a namespace and across them),
// and sent to event handlers and index functions, trimmed (TrimPod).
func TestPodsThroughTheView(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, "held-pods")
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: Webhooks()})
	if err != nil {
		t.Fatal(err)
	}
	view := viewWithPodsByNode(t, mgr)
	inf, err := view.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 100)
	record := func(what string, obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		p, ok := obj.(*corev1.Pod)
		switch {
		case !ok:
			events <- fmt.Sprintf("%s %T", what, obj)
			return
		case p.Namespace != ns: // another test's
			return
		}
		events <- fmt.Sprintf("%s %s on %q", what, p.Name, p.Spec.NodeName)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{"test-by-claim": func(obj any) ([]string, error) {
		if _, ok := obj.(*corev1.Pod); !ok {
			return nil, fmt.Errorf("index function got %T", obj)
		}
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr)

	pod := pendingPod()
	pod.Namespace = ns
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	want := func(what string) {
		t.Helper()
		select {
		case got := <-events:
			if got != what {
				t.Fatalf("event %q, want %q", got, what)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no event, want %q", what)
		}
	}
	want("add kafka-0 on \"\"")
	pod.Spec.NodeName = "node-1"
	if err := e.Client.SubResource("binding").Create(ctx, pod, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}); err != nil {
		t.Fatal(err)
	}
	want("update kafka-0 on \"node-1\"")

	c := view.GetClient()
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-1" || got.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "listener-kafka-0" || got.Spec.Containers[0].Ports[0].ContainerPort != 9092 || got.Spec.Containers[0].Image != "" {
		t.Errorf("get: %+v", got)
	}
	for name, opts := range map[string][]client.ListOption{
		"by index":                {client.MatchingFields{"spec.nodeName": "node-1"}},
		"by index in a namespace": {client.InNamespace(ns), client.MatchingFields{"spec.nodeName": "node-1"}},
		"by label":                {client.InNamespace(ns), client.MatchingLabels{"statefulset.kubernetes.io/pod-name": "kafka-0"}},
	} {
		var list corev1.PodList
		if err := c.List(ctx, &list, opts...); err != nil {
			t.Fatalf("list %s: %v", name, err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "kafka-0" || list.Items[0].Spec.NodeName != "node-1" {
			t.Errorf("list %s: %+v", name, list.Items)
		}
	}
	if err := e.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case got := <-events:
			if got == "delete kafka-0 on \"node-1\"" {
				return
			}
			if got != "update kafka-0 on \"node-1\"" {
				t.Fatalf("event %q, want the pod's deletion", got)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no delete event")
		}
	}
}

// viewWithPodsByNode is the reconcilers' view of mgr (ReconcilerView) with
// an index of pods by node, "spec.nodeName", as reconcile adds its own.
func viewWithPodsByNode(t *testing.T, mgr manager.Manager) manager.Manager {
	t.Helper()
	view, err := ReconcilerView(mgr)
	if err != nil {
		t.Fatal(err)
	}
	if err := view.GetFieldIndexer().IndexField(t.Context(), &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		t.Fatal(err)
	}
	return view
}

// runManager starts mgr until the test ends, and fails the test if it
// ends with an error.
func runManager(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
