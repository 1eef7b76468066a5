package claim

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func setPhase(t *testing.T, ctx context.Context, c client.Client, pod *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	// The controllers label the pod meanwhile: retry on conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = phase
		return c.Status().Update(ctx, pod)
	})
	if err != nil {
		t.Fatalf("pod %s phase %s: %v", pod.Name, phase, err)
	}
}

func TestFinishedPodKeepsItsListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	claim := reconciletest.ListenerClaim(ns, "job-listener", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
	// A named and an unnamed declaration of 8080: one port, the name wins.
	pod := reconciletest.PodWithPorts(ns, "job", claim.Name, corev1.ContainerPort{Name: "http", ContainerPort: 8080}, corev1.ContainerPort{ContainerPort: 8080}, corev1.ContainerPort{ContainerPort: 9090})
	testenv.Create(t, ctx, c, claim, pod)
	setPhase(t, ctx, c, pod, corev1.PodRunning)

	wantPorts := []v1alpha1.ListenerPort{reconciletest.Port("http", 8080), reconciletest.Port("port-9090", 9090)}
	ready := reconciletest.WaitReason(t, ctx, c, ns, claim.Name, v1alpha1.ReasonReady)
	if !reflect.DeepEqual(ready.Spec.Ports, wantPorts) {
		t.Fatalf("listener ports = %+v, want %+v", ready.Spec.Ports, wantPorts)
	}

	// The pod exits (restartPolicy Never): the Listener keeps its ports,
	// its Service and its addresses.
	setPhase(t, ctx, c, pod, corev1.PodSucceeded)
	// Let the claim controller see the finished pod: a later change of the
	// claim's labels is its sign of life.
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	claim.Labels = map[string]string{"seen": "yes"}
	if err := c.Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	l := reconciletest.WaitStatus(t, ctx, c, ns, claim.Name, func(l *v1alpha1.Listener) error {
		if l.Labels["seen"] != "yes" {
			return fmt.Errorf("labels %v", l.Labels)
		}
		return nil
	})
	if !reflect.DeepEqual(l.Spec.Ports, wantPorts) {
		t.Errorf("after its pod finished the listener's ports are %+v, want %+v", l.Spec.Ports, wantPorts)
	}
	if reason, ok := reconciletest.ReadyReason(l); !ok || !reflect.DeepEqual(l.Status.IngressAddresses, ready.Status.IngressAddresses) {
		t.Errorf("after its pod finished: reason %s, addresses %+v; want Ready with %+v", reason, l.Status.IngressAddresses, ready.Status.IngressAddresses)
	}
}

func TestAddressesSurviveErrors(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-vanishing"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	testenv.Create(t, ctx, c, class)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), class) })
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 8080)))
	published := reconciletest.WaitReason(t, ctx, c, ns, "web", v1alpha1.ReasonReady).Status

	same := func(reason string) {
		t.Helper()
		l := reconciletest.WaitReason(t, ctx, c, ns, "web", reason)
		if !reflect.DeepEqual(l.Status.IngressAddresses, published.IngressAddresses) || l.Status.ServiceName != published.ServiceName || l.Status.ServiceType != published.ServiceType {
			t.Errorf("with reason %s the status is %+v; want the published addresses %+v kept", reason, l.Status, published.IngressAddresses)
		}
		cond := l.Status.Conditions[0]
		if cond.ObservedGeneration != l.Generation {
			t.Errorf("condition observed generation %d, listener generation %d", cond.ObservedGeneration, l.Generation)
		}
	}

	// The class is deleted while the webhooks are down: the condition
	// says so, the addresses stay.
	if err := c.Delete(ctx, class); err != nil {
		t.Fatal(err)
	}
	same(v1alpha1.ReasonClassNotFound)

	// It comes back: Ready again, same addresses.
	testenv.Create(t, ctx, c, &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: class.Name}, Spec: class.Spec})
	same(v1alpha1.ReasonReady)

	// An invalid edit admitted without the webhooks (two ports of one
	// number): Invalid, the addresses stay.
	l := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.Ports = append(l.Spec.Ports, reconciletest.Port("again", 8080))
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	same(v1alpha1.ReasonInvalid)
}

func TestHandedOverListenerIsAdopted(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	// What node-loss recovery leaves: no controller, the handover
	// annotation naming the claim to come.
	kept := reconciletest.Listener(ns, "kafka-0-listener", class.Name, reconciletest.Port("kafka", 9092))
	kept.Annotations = map[string]string{v1alpha1.AnnotationHandoverToClaim: "kafka-0-listener", "keep": "me"}
	testenv.Create(t, ctx, c, kept)
	before := reconciletest.WaitReason(t, ctx, c, ns, kept.Name, v1alpha1.ReasonReady)

	claim := reconciletest.ListenerClaim(ns, "kafka-0-listener", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
	testenv.Create(t, ctx, c, claim)
	l := reconciletest.WaitStatus(t, ctx, c, ns, kept.Name, func(l *v1alpha1.Listener) error {
		if ref := metav1.GetControllerOf(l); ref == nil || ref.UID != claim.UID {
			return fmt.Errorf("controller %+v, want claim %s", ref, claim.UID)
		}
		return nil
	})
	if _, has := l.Annotations[v1alpha1.AnnotationHandoverToClaim]; has || l.Annotations["keep"] != "me" {
		t.Errorf("annotations after adoption %v: want the handover annotation gone, the others kept", l.Annotations)
	}
	if l.UID != before.UID || !reflect.DeepEqual(l.Spec.Ports, before.Spec.Ports) || !reflect.DeepEqual(l.Status.IngressAddresses, before.Status.IngressAddresses) {
		t.Errorf("adopted listener changed: uid %s→%s ports %+v addresses %+v", before.UID, l.UID, l.Spec.Ports, l.Status.IngressAddresses)
	}
	reconciletest.WaitEvent(t, ctx, c, ns, claim.Name, EventListenerAdopted)

	// Handed over to another claim, or not at all: left alone.
	for name, annotations := range map[string]map[string]string{
		"users-own":   nil,
		"for-another": {v1alpha1.AnnotationHandoverToClaim: "someone-else"},
	} {
		testenv.Create(t, ctx, c, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations}, Spec: v1alpha1.ListenerSpec{ClassName: &class.Name, Ports: []v1alpha1.ListenerPort{reconciletest.Port("x", 1)}}})
		testenv.Create(t, ctx, c, reconciletest.ListenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerClass: class.Name}))
		reconciletest.WaitEvent(t, ctx, c, ns, name, EventForeignListener)
		other := &v1alpha1.Listener{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, other); err != nil || len(other.OwnerReferences) != 0 {
			t.Errorf("listener %s was adopted: owners %v (err %v)", name, other.OwnerReferences, err)
		}
	}
}

func TestRecreatedClaimGetsANewListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	old := reconciletest.ListenerClaim(ns, "web-0-listener", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
	testenv.Create(t, ctx, c, old, reconciletest.PodWithPorts(ns, "web-0", old.Name, corev1.ContainerPort{Name: "http", ContainerPort: 80}))
	first := reconciletest.WaitReason(t, ctx, c, ns, old.Name, v1alpha1.ReasonReady)

	// The claim goes and comes back under the same name before (or while)
	// the garbage collector removes the old Listener.
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "old claim gone", func() error {
		// kube-controller-manager lifts the claim's protection finalizer
		// once it sees no running pod using it: end the pod.
		if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim still there: %v", err)
		}
		return nil
	})
	recreated := reconciletest.ListenerClaim(ns, old.Name, old.Annotations)
	testenv.Create(t, ctx, c, recreated)
	l := reconciletest.WaitStatus(t, ctx, c, ns, old.Name, func(l *v1alpha1.Listener) error {
		if ref := metav1.GetControllerOf(l); ref == nil || ref.UID != recreated.UID {
			return fmt.Errorf("controller %+v, want the recreated claim %s", ref, recreated.UID)
		}
		return nil
	})
	if l.UID == first.UID {
		t.Errorf("the recreated claim kept the old claim's Listener %s", l.UID)
	}
	// The old pod's ports went with the old Listener; a new pod brings its own.
	if len(l.Spec.Ports) != 0 {
		t.Errorf("new listener ports %+v, want none until a pod declares some", l.Spec.Ports)
	}
	testenv.Create(t, ctx, c, reconciletest.PodWithPorts(ns, "web-0", old.Name, corev1.ContainerPort{Name: "http", ContainerPort: 80}))
	reconciletest.WaitReason(t, ctx, c, ns, old.Name, v1alpha1.ReasonReady)
}
