package takeover

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/claim"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// stackableManager is the field manager the Stackable listener-operator
// applies its Services with.
const stackableManager = "listeners.stackable.tech_listener"

// TestSelectorSwitchIsGapless builds the Service the Stackable operator
// leaves for a Listener (same owner, its labels, its selector on the pods'
// listener.stackable.tech/mnt.<uid> label, applied by its field manager) and
// checks that the operator adopts it in place: same UID, clusterIP and node
// port, every pod the old selector matched labelled, then the selector
// switched. (That the switch waits for the labels is selectorSwitchReady's
// table below and, with real endpoints, TestMigrationFromStackable.)
func TestSelectorSwitchIsGapless(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	// The class comes last: until then the operator leaves the Listener alone.
	className := "adopt-" + ns
	l := reconciletest.Listener(ns, "web", className, reconciletest.Port("http", 8080))
	testenv.Create(t, ctx, c, l)
	theirKey := v1alpha1.PodSelectorLabelPrefix + strings.ReplaceAll(string(l.UID), "-", "")
	ourKey := names.PodSelectorLabel(l.Name)

	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0-listener", Namespace: ns, Annotations: map[string]string{v1alpha1.AnnotationListenerName: l.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
	pod := func(name string, volume bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{theirKey: l.Name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.test/web"}}},
		}
		if volume {
			p.Spec.Volumes = []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}
		}
		return p
	}
	// web-0 mounts the Listener, so the pod reconciler labels it too; stray
	// (their label only) is found only through the Service's selector.
	web0, stray := pod("web-0", true), pod("stray", false)
	testenv.Create(t, ctx, c, claim, web0, stray)

	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": l.Name, "namespace": ns,
			"labels": map[string]any{
				"app.kubernetes.io/name": "listener", "app.kubernetes.io/instance": l.Name,
				"app.kubernetes.io/managed-by": stackableManager, "app.kubernetes.io/component": "listener",
			},
			"ownerReferences": []any{map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener", "name": l.Name, "uid": string(l.UID),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"type":                     "NodePort",
			"ports":                    []any{map[string]any{"name": "http", "port": int64(8080), "protocol": "TCP"}},
			"selector":                 map[string]any{theirKey: l.Name},
			"publishNotReadyAddresses": true,
		},
	}}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(theirs), client.FieldOwner(stackableManager), client.ForceOwnership); err != nil {
		t.Fatalf("apply the Stackable operator's Service: %v", err)
	}
	before := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: l.Name}, before); err != nil {
		t.Fatal(err)
	}

	newClass := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}}
	testenv.Create(t, ctx, c, newClass)
	t.Cleanup(func() { _ = c.Delete(t.Context(), newClass) })

	same := func(s *corev1.Service) error {
		if s.UID != before.UID || s.Spec.ClusterIP != before.Spec.ClusterIP || s.Spec.Ports[0].NodePort != before.Spec.Ports[0].NodePort {
			return fmt.Errorf("Service was replaced or reallocated: uid %s→%s, clusterIP %s→%s, nodePort %d→%d",
				before.UID, s.UID, before.Spec.ClusterIP, s.Spec.ClusterIP, before.Spec.Ports[0].NodePort, s.Spec.Ports[0].NodePort)
		}
		return nil
	}
	// The selector switches to exactly the operator's (the old key gone,
	// although another manager applied it), on the same Service.
	reconciletest.GetService(t, ctx, c, ns, l.Name, func(s *corev1.Service) error {
		if s.Labels[service.LabelManagedBy] != v1alpha1.FieldManager {
			return fmt.Errorf("managed-by %q, want the operator's", s.Labels[service.LabelManagedBy])
		}
		if want := map[string]string{ourKey: v1alpha1.PodSelectorLabelValue}; !maps.Equal(s.Spec.Selector, want) {
			return fmt.Errorf("selector %v, want %v", s.Spec.Selector, want)
		}
		return same(s)
	})
	// Label first: every pod the old selector matched carries the new label
	// (and keeps the old one), stray included.
	for _, p := range []*corev1.Pod{web0, stray} {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if got.Labels[ourKey] != v1alpha1.PodSelectorLabelValue || got.Labels[theirKey] != l.Name {
			t.Errorf("pod %s labels %v after the switch, want both selector labels", p.Name, got.Labels)
		}
	}
	reconciletest.WaitEvent(t, ctx, c, ns, l.Name, EventServiceAdopted)
}

func TestSelectorSwitchReady(t *testing.T) {
	want := map[string]string{"listener.stackable.tech/mnt.web": "true"}
	labelled := map[string]string{"listener.stackable.tech/mnt.0a1b": "web", "listener.stackable.tech/mnt.web": "true"}
	old := map[string]string{"listener.stackable.tech/mnt.0a1b": "web"}
	pod := func(name string, labels map[string]string, phase corev1.PodPhase, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pods    []corev1.Pod
		ready   bool
		waiting string
	}{
		{"no pods", nil, true, ""},
		{"all labelled", []corev1.Pod{pod("a", labelled, corev1.PodRunning, false), pod("b", labelled, corev1.PodPending, false)}, true, ""},
		{"one running pod lacks the label", []corev1.Pod{pod("a", labelled, corev1.PodRunning, false), pod("b", old, corev1.PodRunning, false)}, false, "b"},
		{"a terminating pod does not hold it up", []corev1.Pod{pod("a", labelled, corev1.PodRunning, false), pod("b", old, corev1.PodRunning, true)}, true, ""},
		{"a finished pod does not hold it up", []corev1.Pod{pod("a", old, corev1.PodSucceeded, false), pod("b", old, corev1.PodFailed, false)}, true, ""},
		{"a label with another value does not count", []corev1.Pod{pod("a", map[string]string{"listener.stackable.tech/mnt.web": "web"}, corev1.PodRunning, false)}, false, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, waiting := selectorSwitchReady(want, tc.pods)
			if ready != tc.ready || waiting != tc.waiting {
				t.Errorf("selectorSwitchReady = %v, %q; want %v, %q", ready, waiting, tc.ready, tc.waiting)
			}
		})
	}
}

// TestTakeoverLabels: before a Service switches selectors, its pods get
// only the operator's own labels, never a label of someone else's that the
// selector also names.
func TestTakeoverLabels(t *testing.T) {
	const mnt, vol = "listener.stackable.tech/mnt.web", "listeners.stackable.tech/listener-volume"
	for _, tc := range []struct {
		name        string
		sel, labels map[string]string
		want        map[string]string
	}{
		{"their label only", map[string]string{mnt: "true"}, map[string]string{"listener.stackable.tech/mnt.0a1b": "web"}, map[string]string{mnt: "true", vol: "true"}},
		{"already labelled", map[string]string{mnt: "true"}, map[string]string{mnt: "true", vol: "true"}, map[string]string{}},
		{"extra selector labels are the pod's own", map[string]string{mnt: "true", "app": "web"}, map[string]string{vol: "true"}, map[string]string{mnt: "true"}},
		{"a StatefulSet pod name is its controller's", map[string]string{"statefulset.kubernetes.io/pod-name": "web-0"}, map[string]string{"statefulset.kubernetes.io/pod-name": "web-1"}, map[string]string{vol: "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := takeoverLabels(tc.sel, tc.labels); !maps.Equal(got, tc.want) {
				t.Errorf("takeoverLabels(%v, %v) = %v, want %v", tc.sel, tc.labels, got, tc.want)
			}
		})
	}
}

// TestStackableClaimListenerIsAdopted: the per-claim Listener the Stackable
// operator's node plugin made (named after the claim, owned by the claim's
// PersistentVolume, no controller) is adopted by the claim, keeping the
// Listener and its Service, and is garbage-collected with the claim.
func TestStackableClaimListenerIsAdopted(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	pvName := "pvc-" + ns
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0-listener", Namespace: ns, Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
			VolumeName:       pvName,
		},
	}
	// Their state exists before ours runs: the volume and the Listener
	// first, then the claim (created first, the claim controller would
	// make a Listener of its own before the test could make theirs).
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{
			"listeners.stackable.tech/listener-namespace": ns, "listeners.stackable.tech/listener-name": pvc.Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              v1alpha1.StorageClassName,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: v1alpha1.DriverName, VolumeHandle: pvName,
				VolumeAttributes: map[string]string{"listener.stackable.tech/listener-class": class.Name}}},
		},
	}
	testenv.Create(t, ctx, c, pv)
	t.Cleanup(func() { _ = c.Delete(t.Context(), pv) })
	theirs := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: pvc.Name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "PersistentVolume", Name: pv.Name, UID: pv.UID}}},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class.Name), PublishNotReadyAddresses: ptr.To(true),
			Ports: []v1alpha1.ListenerPort{{Name: "port-8080", Port: 8080}}},
	}
	testenv.Create(t, ctx, c, theirs)
	testenv.Create(t, ctx, c, pvc)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "example.test/web", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}},
		},
	}
	testenv.Create(t, ctx, c, pod)

	svc := reconciletest.GetService(t, ctx, c, ns, pvc.Name, func(*corev1.Service) error { return nil })
	reconciletest.WaitEvent(t, ctx, c, ns, pvc.Name, claim.EventListenerAdopted)
	l := reconciletest.WaitStatus(t, ctx, c, ns, pvc.Name, func(l *v1alpha1.Listener) error {
		ctl := metav1.GetControllerOf(l)
		if ctl == nil || ctl.Kind != "PersistentVolumeClaim" || ctl.UID != pvc.UID || len(l.OwnerReferences) != 1 {
			return fmt.Errorf("owners %+v, want only the claim as controller", l.OwnerReferences)
		}
		return nil
	})
	if l.UID != theirs.UID || l.Spec.Ports[0].Name != "port-8080" || l.Spec.Ports[0].Port != 8080 {
		t.Errorf("adopted Listener uid %s (was %s), ports %+v", l.UID, theirs.UID, l.Spec.Ports)
	}
	reconciletest.GetService(t, ctx, c, ns, pvc.Name, func(s *corev1.Service) error {
		if s.UID != svc.UID || s.Spec.ClusterIP != svc.Spec.ClusterIP {
			return fmt.Errorf("Service replaced: uid %s→%s, clusterIP %s→%s", svc.UID, s.UID, svc.Spec.ClusterIP, s.Spec.ClusterIP)
		}
		return nil
	})

	// The Listener now lives as long as the claim.
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "the adopted Listener is garbage-collected with its claim", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(theirs), &v1alpha1.Listener{})
		if err == nil {
			return fmt.Errorf("listener %s still exists", theirs.Name)
		}
		return client.IgnoreNotFound(err)
	})
}

// TestClassesStoredByStackableServe: the fields the Stackable operator
// accepted and ignored (a ClusterIP class with the serviceExternalTrafficPolicy
// its releases before 25.11 defaulted, a loadBalancerClass and
// pinnedNodePorts on it) leave a Listener Ready with its address, and the
// Service without them, as theirs did.
func TestClassesStoredByStackableServe(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType:                   v1alpha1.ServiceTypeClusterIP,
		ServiceExternalTrafficPolicy:  ptr.To(v1alpha1.TrafficPolicyLocal),
		LoadBalancerClass:             ptr.To("example.test/lb"),
		PinnedNodePorts:               ptr.To(true),
		LoadBalancerAllocateNodePorts: ptr.To(true),
	})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "kafka", class.Name, reconciletest.Port("kafka", 9092)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "kafka", v1alpha1.ReasonReady)
	if len(l.Status.IngressAddresses) != 1 || l.Status.IngressAddresses[0].Address != "kafka."+ns+".svc.example.test" {
		t.Errorf("addresses %+v, want the Service's DNS name", l.Status.IngressAddresses)
	}
	reconciletest.GetService(t, ctx, c, ns, "kafka", func(s *corev1.Service) error {
		if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.ExternalTrafficPolicy != "" || s.Spec.LoadBalancerClass != nil {
			return fmt.Errorf("type %s, traffic policy %q, loadBalancerClass %v", s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.LoadBalancerClass)
		}
		return nil
	})
}

// TestTakeoverDelay: each wait doubles, up to the cap.
func TestTakeoverDelay(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{
		{0, 2 * time.Second}, {1, 4 * time.Second}, {2, 8 * time.Second}, {6, 128 * time.Second},
		{7, 256 * time.Second}, {8, 5 * time.Minute}, {1000, 5 * time.Minute},
	} {
		if got := takeoverDelay(tc.attempts); got != tc.want {
			t.Errorf("takeoverDelay(%d) = %s, want %s", tc.attempts, got, tc.want)
		}
	}
	var b takeoverBackoff
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	for _, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if got := b.wait(key); got != want || b.after(key) != want {
			t.Errorf("wait = %s, after = %s; want %s", got, b.after(key), want)
		}
	}
	b.forget(key)
	if got := b.wait(key); got != 2*time.Second {
		t.Errorf("after forget: wait = %s, want 2s", got)
	}
}

// TestTakeoverThatCannotFinishBacksOff: a tenant's Listener whose Service
// (left by another operator) selects its pods by a foreign label, while
// spec.extraPodSelectorLabels names a label the pods lack, can never
// switch. The operator keeps the old selector, says on the Listener which
// pod lacks which label, and looks again later each time instead of
// listing pods every 2 s forever.
func TestTakeoverThatCannotFinishBacksOff(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	className := "stuck-" + ns
	l := reconciletest.Listener(ns, "web", className, reconciletest.Port("http", 8080))
	l.Spec.ExtraPodSelectorLabels = map[string]string{"tier": "never"}
	testenv.Create(t, ctx, c, l)
	theirKey := v1alpha1.PodSelectorLabelPrefix + strings.ReplaceAll(string(l.UID), "-", "")
	testenv.Create(t, ctx, c, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: map[string]string{theirKey: l.Name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.test/web"}}},
	})
	theirs := &corev1.Service{
		// Labelled as the Stackable operator labels its Services (the
		// reconcilers cache only Services with app.kubernetes.io/name=listener).
		ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: ns, Labels: map[string]string{service.LabelName: service.LabelNameValue}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: l.Name, UID: l.UID, Controller: ptr.To(true),
		}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{theirKey: l.Name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}
	testenv.Create(t, ctx, c, theirs)
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	testenv.Create(t, ctx, c, class)
	t.Cleanup(func() { _ = c.Delete(t.Context(), class) })

	// The second wait is twice the first, and the event says why.
	var note string
	testenv.Converges(t, "a second TakeoverPending event, 4s", func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, ev := range evs.Items {
			if ev.Regarding.Name == l.Name && ev.Reason == EventTakeoverPending {
				if strings.HasSuffix(ev.Note, "looking again in 4s") {
					note = ev.Note
					return nil
				}
				seen = append(seen, ev.Note)
			}
		}
		return fmt.Errorf("events: %v", seen)
	})
	if !strings.Contains(note, "pod web-0 lacks tier=never") {
		t.Errorf("event %q does not say what the pod lacks", note)
	}
	got := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Spec.Selector, theirs.Spec.Selector) {
		t.Errorf("selector %v, want the old one kept while pods lack the new labels", got.Spec.Selector)
	}
}
