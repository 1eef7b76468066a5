package claim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestClaimGetsItsOwnListenerUntilDeleted(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})

	// A claim that names an existing Listener creates nothing.
	shared := reconciletest.ListenerClaim(ns, "shared", map[string]string{v1alpha1.AnnotationListenerName: "elsewhere"})
	own := reconciletest.ListenerClaim(ns, "web-0-listener", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
	own.Labels = map[string]string{"app": "web"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "main", Image: "example", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090}}},
				{Name: "side", Image: "example", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}},
			},
			Volumes: []corev1.Volume{reconciletest.ClaimVolume("listener", own.Name), reconciletest.ClaimVolume("other", shared.Name)},
		},
	}
	testenv.Create(t, ctx, c, shared, own, pod)

	l := reconciletest.WaitReason(t, ctx, c, ns, own.Name, v1alpha1.ReasonReady)
	if ref := metav1.GetControllerOf(l); ref == nil || ref.Kind != "PersistentVolumeClaim" || ref.UID != own.UID {
		t.Errorf("listener controller = %+v, want the claim %s", ref, own.UID)
	}
	if !reflect.DeepEqual(l.Labels, own.Labels) || ptr.Deref(l.Spec.ClassName, "") != class.Name {
		t.Errorf("listener labels %v class %v, want the claim's labels %v and class %s", l.Labels, l.Spec.ClassName, own.Labels, class.Name)
	}
	wantPorts := []v1alpha1.ListenerPort{reconciletest.Port("http", 8080), reconciletest.Port("metrics", 9100), reconciletest.Port("port-9090", 9090)}
	if !reflect.DeepEqual(l.Spec.Ports, wantPorts) {
		t.Errorf("listener ports = %+v, want %+v", l.Spec.Ports, wantPorts)
	}
	reconciletest.GetService(t, ctx, c, ns, names.ServiceName(own.Name), nil)
	testenv.Converges(t, "pod labelled for its listener", func() error {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			return err
		}
		if p.Labels[names.PodSelectorLabel(own.Name)] != v1alpha1.PodSelectorLabelValue {
			return fmt.Errorf("labels %v", p.Labels)
		}
		return nil
	})
	reconciletest.WaitEvent(t, ctx, c, ns, own.Name, EventListenerCreated)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shared"}, &v1alpha1.Listener{}); !apierrors.IsNotFound(err) {
		t.Errorf("a claim naming a listener got one of its own: err %v", err)
	}

	// A claim whose name is taken by a Listener it does not own leaves that
	// Listener alone and says so.
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "taken", class.Name, reconciletest.Port("x", 1)))
	testenv.Create(t, ctx, c, reconciletest.ListenerClaim(ns, "taken", map[string]string{v1alpha1.AnnotationListenerClass: class.Name}))
	reconciletest.WaitEvent(t, ctx, c, ns, "taken", EventForeignListener)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "taken"}, l); err != nil || len(l.OwnerReferences) != 0 || len(l.Spec.Ports) != 1 {
		t.Errorf("foreign listener changed: owners %v ports %v (err %v)", l.OwnerReferences, l.Spec.Ports, err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: own.Name}, l); err != nil {
		t.Fatal(err)
	}

	// The pod goes, the Listener keeps its ports.
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "pod gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod still there: %v", err)
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil || !reflect.DeepEqual(l.Spec.Ports, wantPorts) {
		t.Errorf("listener after its pod left: ports %+v (err %v), want %+v", l.Spec.Ports, err, wantPorts)
	}

	// Deleting the claim garbage-collects the Listener and its Service.
	if err := c.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "listener and service garbage-collected", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), &v1alpha1.Listener{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("listener still there (err %v)\n%s", err, e.ControllerManagerLog())
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.ServiceName(own.Name)}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("service still there (err %v)", err)
		}
		return nil
	})
}

func TestPodListeners(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	n := reconciletest.Node(t, ctx, c, ns+"-node", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.2.0.1"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a"})
	nodePortClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	clusterClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "shared", clusterClass.Name, reconciletest.Port("http", 80)), reconciletest.ListenerClaim(ns, "shared-claim", map[string]string{v1alpha1.AnnotationListenerName: "shared"}))

	// A pod with a generated name and a generic ephemeral listener volume:
	// admission could not know its claim's name, so the controller labels it.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:   n.Name,
			Containers: []corev1.Container{{Name: "main", Image: "example", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
			Volumes: []corev1.Volume{
				{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerClass: nodePortClass.Name}},
					Spec:       reconciletest.ListenerClaim("", "", nil).Spec,
				}}}},
				reconciletest.ClaimVolume("cluster", "shared-claim"),
			},
		},
	}
	testenv.Create(t, ctx, c, pod)
	// What Kubernetes' ephemeral volume controller would create.
	eph := reconciletest.ListenerClaim(ns, pod.Name+"-listener", map[string]string{v1alpha1.AnnotationListenerClass: nodePortClass.Name})
	eph.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	testenv.Create(t, ctx, c, eph)

	ephListener := reconciletest.WaitStatus(t, ctx, c, ns, eph.Name, func(l *v1alpha1.Listener) error {
		if l.Status.NodePorts["http"] == 0 {
			return fmt.Errorf("no node port yet: %+v", l.Status)
		}
		return nil
	})
	sharedListener := reconciletest.WaitReason(t, ctx, c, ns, "shared", v1alpha1.ReasonReady)

	pl := &v1alpha1.PodListeners{}
	testenv.Converges(t, "podlisteners of the pod", func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.PodListenersName(pod.UID)}, pl); err != nil {
			return err
		}
		if len(pl.Spec.Listeners) != 2 {
			return fmt.Errorf("listeners %+v", pl.Spec.Listeners)
		}
		return nil
	})
	wantNode := v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeNode, IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "10.2.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: ephListener.Status.NodePorts},
	}}
	if got := pl.Spec.Listeners["listener"]; !reflect.DeepEqual(got, wantNode) {
		t.Errorf("NodePort volume entry = %+v, want %+v", got, wantNode)
	}
	wantCluster := v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: sharedListener.Status.IngressAddresses}
	if got := pl.Spec.Listeners["cluster"]; !reflect.DeepEqual(got, wantCluster) {
		t.Errorf("ClusterIP volume entry = %+v, want %+v", got, wantCluster)
	}
	if ref := metav1.GetControllerOf(pl); ref == nil || ref.UID != pod.UID {
		t.Errorf("podlisteners controller = %+v, want the pod", ref)
	}
	p := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
		t.Fatal(err)
	}
	for _, ln := range []string{eph.Name, "shared"} {
		if p.Labels[names.PodSelectorLabel(ln)] != v1alpha1.PodSelectorLabelValue {
			t.Errorf("pod labels %v lack the selector label of listener %s", p.Labels, ln)
		}
	}

	// The shared Listener's addresses change (its class now prefers IPs):
	// the pod's entry follows.
	if err := c.Get(ctx, client.ObjectKeyFromObject(clusterClass), clusterClass); err != nil {
		t.Fatal(err)
	}
	clusterClass.Spec.PreferredAddressType = v1alpha1.PreferredAddressIP
	if err := c.Update(ctx, clusterClass); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "podlisteners follow the listener", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pl), pl); err != nil {
			return err
		}
		if got := pl.Spec.Listeners["cluster"].IngressAddresses; len(got) != 1 || got[0].AddressType != v1alpha1.AddressTypeIP {
			return fmt.Errorf("cluster entry %+v", got)
		}
		return nil
	})

	// Someone changes what it holds: its change brings the pod back (the
	// operator holds only PodListeners' hashes, caches.PodListenersHashes,
	// and is sent their events), and the spec is written again.
	if err := c.Get(ctx, client.ObjectKeyFromObject(pl), pl); err != nil {
		t.Fatal(err)
	}
	want := pl.Spec
	pl.Spec.Listeners = map[string]v1alpha1.PodListener{"cluster": {Scope: v1alpha1.PodListenerScopeCluster}}
	pl.Annotations[v1alpha1.AnnotationPodListenersHash] = "tampered"
	if err := c.Update(ctx, pl); err != nil {
		t.Fatal(err)
	}
	// (Its addresses, that is: what the pod started with was erased with
	// the rest and cannot be known again.)
	sameAddresses := func(got v1alpha1.PodListenersSpec) error {
		for _, vol := range []string{"listener", "cluster"} {
			if !reflect.DeepEqual(got.Listeners[vol].IngressAddresses, want.Listeners[vol].IngressAddresses) {
				return fmt.Errorf("volume %s: addresses %+v, want %+v", vol, got.Listeners[vol].IngressAddresses, want.Listeners[vol].IngressAddresses)
			}
		}
		return nil
	}
	testenv.Converges(t, "a changed podlisteners is written again", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pl), pl); err != nil {
			return err
		}
		return sameAddresses(pl.Spec)
	})
	// Someone deletes it: it is made again.
	old := pl.UID
	if err := c.Delete(ctx, pl); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "a deleted podlisteners is made again", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pl), pl); err != nil {
			return err
		}
		if pl.UID == old {
			return fmt.Errorf("still the deleted one (uid %s)", old)
		}
		return sameAddresses(pl.Spec)
	})
}

// TestStatefulSetReplicaSelectedByPodName: the claim of a replica of a
// StatefulSet created by this version (its claim template names itself),
// which the StatefulSet has, gets a Listener whose Service selects the pod by the StatefulSet
// controller's pod-name label; the pod reconciler adds no selector label
// for it, while it still labels the pod for a shared Listener it mounts.
func TestStatefulSetReplicaSelectedByPodName(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "shared", class.Name, reconciletest.Port("http", 8080)))
	// The StatefulSet that made the claim: its pod web-1 mounts it.
	testenv.Create(t, ctx, c, reconciletest.ListenerStatefulSet(ns, "web", "listener", class.Name))

	own := reconciletest.ListenerClaim(ns, "listener-web-1", map[string]string{
		v1alpha1.AnnotationListenerClass:            class.Name,
		v1alpha1.AnnotationStatefulSetClaimTemplate: "listener",
	})
	shared := reconciletest.ListenerClaim(ns, "shared-web-1", map[string]string{v1alpha1.AnnotationListenerName: "shared", v1alpha1.AnnotationStatefulSetClaimTemplate: "shared"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{
			v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelStatefulSetPodName: "web-1",
		}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "example", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
			Volumes:    []corev1.Volume{reconciletest.ClaimVolume("listener", own.Name), reconciletest.ClaimVolume("shared", shared.Name)},
		},
	}
	testenv.Create(t, ctx, c, own, shared, pod)

	l := reconciletest.WaitReason(t, ctx, c, ns, own.Name, v1alpha1.ReasonReady)
	if got := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; got != "web-1" {
		t.Errorf("Listener annotation %s = %q, want web-1", v1alpha1.AnnotationStatefulSetPod, got)
	}
	reconciletest.GetService(t, ctx, c, ns, names.ServiceName(own.Name), func(s *corev1.Service) error {
		if want := map[string]string{v1alpha1.LabelStatefulSetPodName: "web-1"}; !reflect.DeepEqual(s.Spec.Selector, want) {
			return fmt.Errorf("selector %v, want %v", s.Spec.Selector, want)
		}
		return nil
	})
	reconciletest.GetService(t, ctx, c, ns, names.ServiceName("shared"), func(s *corev1.Service) error {
		if want := map[string]string{names.PodSelectorLabel("shared"): v1alpha1.PodSelectorLabelValue}; !reflect.DeepEqual(s.Spec.Selector, want) {
			return fmt.Errorf("shared Listener's selector %v, want %v", s.Spec.Selector, want)
		}
		return nil
	})
	p := &corev1.Pod{}
	testenv.Converges(t, "pod labelled for the shared listener", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			return err
		}
		if p.Labels[names.PodSelectorLabel("shared")] != v1alpha1.PodSelectorLabelValue {
			return fmt.Errorf("labels %v", p.Labels)
		}
		return nil
	})
	if v, ok := p.Labels[names.PodSelectorLabel(own.Name)]; ok {
		t.Errorf("pod labelled %s=%s for a Listener that selects it by name", names.PodSelectorLabel(own.Name), v)
	}
}

// TestClaimWithEmptyClassGetsNoListener: a listener claim with an empty
// listener-class (admission refuses it; it got in while the webhooks were
// down) gets no Listener, and the claim says why and how to fix it; once
// it names a class, it gets its Listener.
func TestClaimWithEmptyClassGetsNoListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	pvc := reconciletest.ListenerClaim(ns, "empty", map[string]string{v1alpha1.AnnotationListenerClass: ""})
	testenv.Create(t, ctx, c, pvc)
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "empty", EventNoListener)
	for _, want := range []string{"empty listeners.stackable.tech/listener-class annotation", "kubectl annotate --overwrite pvc empty listeners.stackable.tech/listener-class=<class>"} {
		if !strings.Contains(ev.Note, want) {
			t.Errorf("event note %q lacks %q", ev.Note, want)
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "empty"}, &v1alpha1.Listener{}); !apierrors.IsNotFound(err) {
		t.Errorf("a claim with an empty class got a Listener: err %v", err)
	}

	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationListenerClass, class.Name)
	if err := c.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitEvent(t, ctx, c, ns, "empty", EventListenerCreated)
	l := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "empty"}, l); err != nil || ptr.Deref(l.Spec.ClassName, "") != class.Name {
		t.Errorf("after naming class %s: Listener %+v, err %v", class.Name, l.Spec, err)
	}
}

// TestUnmarkedClaimIsMarked: a listener claim admitted without the mark
// (the claim webhook was down, or an older version admitted it) is not in
// the caches, which select marked claims; the leader's scan marks it, and
// it then gets its Listener. A claim of another storage class is left
// alone.
func TestUnmarkedClaimIsMarked(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	unmarked := reconciletest.ListenerClaim(ns, "unmarked", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
	unmarked.Labels = map[string]string{"app": "web"}
	other := reconciletest.ListenerClaim(ns, "other", nil)
	other.Labels = nil
	other.Spec.StorageClassName = ptr.To("standard")
	testenv.Create(t, ctx, c, unmarked)
	testenv.Create(t, ctx, c, other)
	testenv.Converges(t, "the unmarked claim marked and given its Listener", func() error {
		var got corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(unmarked), &got); err != nil {
			return err
		}
		if got.Labels[v1alpha1.LabelListenerVolume] != "true" || got.Labels["app"] != "web" {
			return fmt.Errorf("labels %v, want the mark added to app=web", got.Labels)
		}
		var l v1alpha1.Listener
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ClaimListenerName("unmarked")}, &l); err != nil {
			return err
		}
		if _, ok := l.Labels[v1alpha1.LabelListenerVolume]; ok || l.Labels["app"] != "web" {
			return fmt.Errorf("Listener labels %v, want the claim's without the mark", l.Labels)
		}
		return nil
	})
	var got corev1.PersistentVolumeClaim
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels[v1alpha1.LabelListenerVolume]; ok {
		t.Errorf("a claim of another storage class was marked: %v", got.Labels)
	}
}
