package reconciletest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// Setup returns the shared environment, a context for the test and a fresh
// namespace.
func Setup(t *testing.T) (*testenv.Env, context.Context, string) {
	t.Helper()
	e := testenv.Require(t, Env)
	ctx := t.Context()
	return e, ctx, e.Namespace(t, ctx, "t-")
}

// NewClass creates a ListenerClass with a name unique to the test and
// deletes it afterwards.
func NewClass(t *testing.T, ctx context.Context, c client.Client, spec v1alpha1.ListenerClassSpec) *v1alpha1.ListenerClass {
	t.Helper()
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "lc-"}, Spec: spec}
	testenv.Create(t, ctx, c, class)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), class) })
	return class
}

// Listener is a Listener of class with ports.
func Listener(ns, name, class string, ports ...v1alpha1.ListenerPort) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To(class), Ports: ports},
	}
}

// Port is a TCP port of a Listener.
func Port(name string, n int32) v1alpha1.ListenerPort {
	return v1alpha1.ListenerPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

// ReadyReason returns the reason of a Listener's Ready condition and whether
// it is true.
func ReadyReason(l *v1alpha1.Listener) (string, bool) {
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return "", false
	}
	return c.Reason, c.Status == metav1.ConditionTrue
}

// WaitReason waits until the Listener's Ready condition has reason and
// returns the Listener.
func WaitReason(t *testing.T, ctx context.Context, c client.Client, ns, name, reason string) *v1alpha1.Listener {
	t.Helper()
	l := &v1alpha1.Listener{}
	testenv.Converges(t, fmt.Sprintf("listener %s Ready reason %s", name, reason), func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		if got, _ := ReadyReason(l); got != reason {
			return fmt.Errorf("reason %q, conditions %+v", got, l.Status.Conditions)
		}
		return nil
	})
	return l
}

// WaitStatus waits until check accepts the Listener's status.
func WaitStatus(t *testing.T, ctx context.Context, c client.Client, ns, name string, check func(*v1alpha1.Listener) error) *v1alpha1.Listener {
	t.Helper()
	l := &v1alpha1.Listener{}
	testenv.Converges(t, "listener "+name+" status", func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		return check(l)
	})
	return l
}

// GetService waits until the Service exists and check (if any) accepts it.
func GetService(t *testing.T, ctx context.Context, c client.Client, ns, name string, check func(*corev1.Service) error) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	testenv.Converges(t, "service "+name, func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
			return err
		}
		if check != nil {
			return check(svc)
		}
		return nil
	})
	return svc
}

// WaitEvent waits for an event with reason about the named object.
func WaitEvent(t *testing.T, ctx context.Context, c client.Client, ns, regarding, reason string) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	testenv.Converges(t, fmt.Sprintf("event %s about %s", reason, regarding), func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for i, ev := range evs.Items {
			if ev.Regarding.Name == regarding && ev.Reason == reason {
				found = &evs.Items[i]
				return nil
			}
			seen = append(seen, ev.Regarding.Name+"/"+ev.Reason)
		}
		return fmt.Errorf("events: %s", strings.Join(seen, ", "))
	})
	return found
}

// Node creates a node with addresses and deletes it afterwards.
func Node(t *testing.T, ctx context.Context, c client.Client, name string, addrs ...corev1.NodeAddress) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	testenv.Create(t, ctx, c, n)
	n.Status.Addresses = addrs
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatalf("set addresses of node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), n) })
	return n
}

// ResourceOne is the quantity 1, the size of every claim.
func ResourceOne() *resource.Quantity {
	q := resource.MustParse("1")
	return &q
}

// ServingPod creates a listener pod (labelled as the pod webhook labels it,
// which this package's API server does not run) that mounts claims and is
// bound to node, with its Ready condition as the kubelet would report it.
func ServingPod(t *testing.T, ctx context.Context, c client.Client, ns, name, node string, ready bool, claims ...string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "example"}}},
	}
	for i, claim := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, ClaimVolume(fmt.Sprintf("listener-%d", i), claim))
	}
	testenv.Create(t, ctx, c, p)
	SetPodReady(t, ctx, c, p, ready)
	return p
}

// SetPodReady sets a running pod's Ready condition, as the kubelet does.
func SetPodReady(t *testing.T, ctx context.Context, c client.Client, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	SetPodStatus(t, ctx, c, p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	})
}

// BindClaim binds claim to the volume named pv, as the PV controller does.
// The operator labels its claims meanwhile: read, change, write.
func BindClaim(t *testing.T, ctx context.Context, c client.Client, claim *corev1.PersistentVolumeClaim, pv string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		claim.Spec.VolumeName = pv
		return c.Update(ctx, claim)
	}); err != nil {
		t.Fatalf("bind claim %s: %v", claim.Name, err)
	}
}

// SetPodStatus changes a pod's status as the kubelet writes it. The
// operator labels its pods meanwhile: read, change, write.
func SetPodStatus(t *testing.T, ctx context.Context, c client.Client, p *corev1.Pod, change func(*corev1.Pod)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		change(p)
		return c.Status().Update(ctx, p)
	}); err != nil {
		t.Fatalf("status of pod %s: %v", p.Name, err)
	}
}

// ListenerClaim is a listener claim as admitted: marked, as the claim
// webhook (which this package's API server does not run) marks it.
func ListenerClaim(ns, name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations, Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *ResourceOne()}},
		},
	}
}

// ClaimVolume is a pod volume named volume that mounts claim.
func ClaimVolume(volume, claim string) corev1.Volume {
	return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// PodWithPorts is a pod mounting claim whose one container declares ports.
func PodWithPorts(ns, name, claim string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "example", Ports: ports}},
			Volumes:       []corev1.Volume{ClaimVolume("listener", claim)},
		},
	}
}

// ListenerStatefulSet is a StatefulSet named name whose listener claim
// template tmpl names itself, as the StatefulSet webhook injects it, with no
// replicas (no controller runs here anyway).
func ListenerStatefulSet(ns, name, tmpl, class string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example"}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: tmpl, Annotations: map[string]string{
					v1alpha1.AnnotationListenerClass: class, v1alpha1.AnnotationStatefulSetClaimTemplate: tmpl}},
				Spec: ListenerClaim(ns, tmpl, nil).Spec,
			}},
		},
	}
}

// AgreementClient is a client over the shape's objects, with the indexes
// the reconcilers read through (FakeClient).
func AgreementClient(s agreement.Shape) client.Client {
	return FakeClient(s.Objects(true)...)
}

// FakeClient is a fake client over objs with every index of the
// reconcilers' cache, the ones the registry registers
// (lookup.Indexes).
func FakeClient(objs ...client.Object) client.Client {
	b := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...)
	for _, ix := range lookup.Indexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Values)
	}
	return b.Build()
}

// GatedPod is a pod on node with the readiness gate of the addresses
// (what the pod webhook adds for a gated class, which this package's API
// server does not run) that mounts claim as volume "listener".
func GatedPod(ns, name, claim, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "example"}},
			Volumes:        []corev1.Volume{ClaimVolume("listener", claim)},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAddressesReady}}}}
}

// SetIngress gives the Service named name the load-balancer address ip, as
// a load-balancer controller does.
func SetIngress(t *testing.T, c client.Client, ns, name, ip string) {
	t.Helper()
	testenv.Converges(t, "set the ingress of "+name, func() error {
		svc := &corev1.Service{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		return c.Status().Update(t.Context(), svc)
	})
}
