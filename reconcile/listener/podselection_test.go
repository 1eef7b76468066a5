package listener

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestPlainClaimSelectsNoPodByName (issue 37, case 2): a plain claim
// "x-db-0" that asks, by the statefulset-claim-template annotation, that
// its Listener select pod db-0 by name, and that no StatefulSet made
// (admitted while the webhooks were down: the claim webhook refuses it),
// gets a Listener that selects the pods that mount it by label, never pod
// db-0, which mounts no listener volume; the Listener says why (Ready False,
// Invalid) and the claim gets a Warning event.
func TestPlainClaimSelectsNoPodByName(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0", Labels: map[string]string{v1alpha1.LabelStatefulSetPodName: "db-0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "example"}}}}
	claim := reconciletest.ListenerClaim(ns, "x-db-0", map[string]string{v1alpha1.AnnotationListenerClass: class.Name, v1alpha1.AnnotationStatefulSetClaimTemplate: "x"})
	web := reconciletest.PodWithPorts(ns, "web-0", claim.Name, corev1.ContainerPort{Name: "http", ContainerPort: 8080})
	web.Labels = map[string]string{v1alpha1.LabelListenerVolume: "true"} // as the pod webhook labels it
	testenv.Create(t, ctx, c, db, claim, web)

	l := reconciletest.WaitStatus(t, ctx, c, ns, claim.Name, func(l *v1alpha1.Listener) error {
		// Until the pod's ports are seen the Listener has none (Invalid
		// too): wait for the verdict on the selection.
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); cond == nil || cond.Reason != v1alpha1.ReasonInvalid || !strings.Contains(cond.Message, "StatefulSet") {
			return fmt.Errorf("Ready %+v", cond)
		}
		return nil
	})
	if pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok {
		t.Errorf("Listener annotated %s=%s", v1alpha1.AnnotationStatefulSetPod, pod)
	}
	msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message
	for _, want := range []string{`asks that the claim's own Listener select pod "db-0"`, `StatefulSet "db" does not exist in this namespace`,
		"kubectl annotate pvc x-db-0 listeners.stackable.tech/statefulset-claim-template-", "selects the pods that mount the claim"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q lacks %q", msg, want)
		}
	}
	reconciletest.GetService(t, ctx, c, ns, names.ServiceName(claim.Name), func(s *corev1.Service) error {
		if want := map[string]string{names.PodSelectorLabel(claim.Name): v1alpha1.PodSelectorLabelValue}; !maps.Equal(s.Spec.Selector, want) {
			return fmt.Errorf("selector %v, want %v", s.Spec.Selector, want)
		}
		return nil
	})
	reconciletest.WaitEvent(t, ctx, c, ns, claim.Name, claimlistener.EventStatefulSetPodRefused)
}

// TestStatefulSetPodAnnotationJudgedByTheStatefulSet: a Listener that
// selects a pod by name, as this operator made it for a claim before the
// StatefulSet was checked (controlled by the claim, no record anywhere),
// keeps its selection when its StatefulSet has the claim template (no
// outage on upgrade); the same Listener of a plain claim (the annotation
// set while the webhooks were down) is Invalid and gets no Service that
// selects the pod.
func TestStatefulSetPodAnnotationJudgedByTheStatefulSet(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.ListenerStatefulSet(ns, "web", "listener", class.Name))
	for _, tc := range []struct{ claim, pod string }{{"listener-web-0", "web-0"}, {"listener-db-0", "db-0"}} {
		// No class yet: the claim reconciler makes no Listener, and the
		// test makes it as an earlier version did.
		claim := reconciletest.ListenerClaim(ns, tc.claim, map[string]string{v1alpha1.AnnotationStatefulSetClaimTemplate: "listener"})
		testenv.Create(t, ctx, c, claim)
		l := reconciletest.Listener(ns, tc.claim, class.Name, reconciletest.Port("http", 8080))
		l.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: tc.pod}
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim.Name, UID: claim.UID, Controller: ptr.To(true)}}
		testenv.Create(t, ctx, c, l)
		claim.Annotations[v1alpha1.AnnotationListenerClass] = class.Name
		if err := c.Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.WaitReason(t, ctx, c, ns, "listener-web-0", v1alpha1.ReasonReady)
	reconciletest.GetService(t, ctx, c, ns, "listener-web-0", func(s *corev1.Service) error {
		if want := map[string]string{v1alpha1.LabelStatefulSetPodName: "web-0"}; !maps.Equal(s.Spec.Selector, want) {
			return fmt.Errorf("selector %v, want %v", s.Spec.Selector, want)
		}
		return nil
	})
	forged := reconciletest.WaitReason(t, ctx, c, ns, "listener-db-0", v1alpha1.ReasonInvalid)
	msg := meta.FindStatusCondition(forged.Status.Conditions, v1alpha1.ConditionReady).Message
	if want := `(its claim listener-db-0 asks for that pod, but StatefulSet "db" does not exist in this namespace)`; !strings.Contains(msg, want) {
		t.Errorf("Ready message %q lacks %q", msg, want)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener-db-0"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service of the forged Listener: %v, want none", err)
	}
}

// TestReplacedStatefulSetSelectsNoPodByName (issue 48, case 2): StatefulSet
// db with a listener claim template is deleted (its claims stay) and a
// different StatefulSet db without listener volumes is made. The Listener
// of claim listener-db-0 turns Invalid, saying why, and its Service, which
// selected pod db-0 by name, goes: the new db-0 is not behind it. The
// running operator sees it (the decision was remembered per process and
// judged again only after a restart), and a fresh reconciler, as after a
// restart, judges the same.
func TestReplacedStatefulSetSelectsNoPodByName(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	sts, l := replicaOfStatefulSet(t, c, ns, "db", class.Name)
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonReady)
	reconciletest.GetService(t, ctx, c, ns, l.Name, func(s *corev1.Service) error {
		if want := map[string]string{v1alpha1.LabelStatefulSetPodName: "db-0"}; !maps.Equal(s.Spec.Selector, want) {
			return fmt.Errorf("selector %v, want %v", s.Spec.Selector, want)
		}
		return nil
	})

	// Replaced: deleted (its claims stay), made again without listener
	// volumes.
	if err := c.Delete(ctx, sts); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "StatefulSet db gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("StatefulSet db: %v", err)
		}
		return nil
	})
	other := reconciletest.ListenerStatefulSet(ns, "db", "listener", class.Name)
	other.Spec.VolumeClaimTemplates = nil
	testenv.Create(t, ctx, c, other)

	const why = `StatefulSet "db" has no listener claim template "listener"`
	// While no StatefulSet db existed the Listener was Invalid already,
	// for that reason: wait for the verdict on the new one.
	got := &v1alpha1.Listener{}
	testenv.Converges(t, "Listener Invalid for the replaced StatefulSet", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Name}, got); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Reason != v1alpha1.ReasonInvalid || !strings.Contains(ready.Message, why) {
			return fmt.Errorf("Ready %+v, want reason %s with %q", ready, v1alpha1.ReasonInvalid, why)
		}
		return nil
	})
	testenv.Converges(t, "the Service that selected db-0 by name gone", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Name}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Service %s: %v", l.Name, err)
		}
		return nil
	})

	// A fresh reconciler (a restarted operator) judges the same.
	fresh := &listenerReconciler{client: reconciletest.LeaderClient, live: c, recorder: events.NewFakeRecorder(10), opts: reconciletest.Options(), gatewayAPI: &gatewayAPIState{}}
	errs, _, err := fresh.statefulSetPodErrors(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if agg := errs.ToAggregate(); agg == nil || !strings.Contains(agg.Error(), why) {
		t.Errorf("a fresh reconciler's verdict %v, want %q", agg, why)
	}
}

// TestStatefulSetGoneServiceFollowsClass: while no StatefulSet of the
// name exists, the Listener of its claim is not Ready (Invalid, waiting for
// it), its Service keeps selecting the pod by name, and still follows its
// class: a class narrowed from NodePort to ClusterIP leaves no node port
// open.
func TestStatefulSetGoneServiceFollowsClass(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	sts, l := replicaOfStatefulSet(t, c, ns, "web", class.Name)
	reconciletest.GetService(t, ctx, c, ns, l.Name, func(s *corev1.Service) error {
		if s.Spec.Type != corev1.ServiceTypeNodePort {
			return fmt.Errorf("type %s", s.Spec.Type)
		}
		return nil
	})
	if err := c.Delete(ctx, sts); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonInvalid)
	class.Spec.ServiceType = v1alpha1.ServiceTypeClusterIP
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	reconciletest.GetService(t, ctx, c, ns, l.Name, func(s *corev1.Service) error {
		if want := map[string]string{v1alpha1.LabelStatefulSetPodName: "web-0"}; s.Spec.Type != corev1.ServiceTypeClusterIP || !maps.Equal(s.Spec.Selector, want) {
			return fmt.Errorf("type %s, selector %v; want ClusterIP selecting %v", s.Spec.Type, s.Spec.Selector, want)
		}
		return nil
	})
	ready := meta.FindStatusCondition(reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonInvalid).Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, `StatefulSet "web"`) {
		t.Errorf("Ready message %q does not say it waits for StatefulSet web", ready.Message)
	}
}

// replicaOfStatefulSet makes StatefulSet name with a listener claim
// template of class, and its replica 0's claim and Listener as the
// operator makes them (selecting pod <name>-0 by name).
func replicaOfStatefulSet(t *testing.T, c client.Client, ns, name, class string) (*appsv1.StatefulSet, *v1alpha1.Listener) {
	t.Helper()
	ctx := t.Context()
	sts := reconciletest.ListenerStatefulSet(ns, name, "listener", class)
	testenv.Create(t, ctx, c, sts)
	claim := reconciletest.ListenerClaim(ns, "listener-"+name+"-0", map[string]string{v1alpha1.AnnotationStatefulSetClaimTemplate: "listener"})
	testenv.Create(t, ctx, c, claim)
	l := reconciletest.Listener(ns, claim.Name, class, reconciletest.Port("http", 8080))
	l.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: name + "-0"}
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim.Name, UID: claim.UID, Controller: ptr.To(true)}}
	testenv.Create(t, ctx, c, l)
	claim.Annotations[v1alpha1.AnnotationListenerClass] = class
	if err := c.Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	return sts, l
}
