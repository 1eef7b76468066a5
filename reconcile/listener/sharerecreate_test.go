package listener

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestSharingRecreatedListener: a Listener of a sharing class
// (spec.loadBalancerSharing) that a StatefulSet's pod mounted keeps its
// Service's sharing key once no pod mounts it (scaled to zero); deleted
// and made again under its name while no pod mounts it (the suite's
// garbage collector is held off by holdServices), the new Listener takes
// its predecessor's Service over with the key and ports unchanged, instead
// of reading AwaitingWorkload until a pod mounts it again.
func TestSharingRecreatedListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	holdServices(t, c, ns)
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerClass: ptr.To("listeners.test/none"), LoadBalancerAllocateNodePorts: ptr.To(false),
		LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9005}})
	const name = "web-bootstrap"
	listener := func() *v1alpha1.Listener {
		return reconciletest.Listener(ns, name, class.Name, reconciletest.Port("http", 8080))
	}
	testenv.Create(t, ctx, c, listener(), reconciletest.ListenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerName: name}))
	pod := reconciletest.PodWithPorts(ns, "web-0", name, corev1.ContainerPort{Name: "http", ContainerPort: 8080})
	pod.Labels = map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelStatefulSetPodName: pod.Name}
	testenv.Create(t, ctx, c, pod)
	key := ns + "/web"
	svcKey := types.NamespacedName{Namespace: ns, Name: names.ServiceName(name)}
	first := sharedService(t, c, ns, name, key, map[string]int32{"http": 9005})
	reason, _ := reconciletest.ReadyReason(reconciletest.WaitStatus(t, ctx, c, ns, name, func(l *v1alpha1.Listener) error {
		if r, _ := reconciletest.ReadyReason(l); r == "" || r == v1alpha1.ReasonAwaitingWorkload {
			return fmt.Errorf("Ready reason %q: %s", r, readyMessage(l))
		}
		return nil
	}))

	// Scaled to zero: the pod goes, the Listener reconciles without it
	// and keeps its key.
	lkey := types.NamespacedName{Namespace: ns, Name: name}
	before := reconciletest.Reconciles.Count(ControllerName, lkey)
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "the pod gone from the reconcilers' cache", func() error {
		if err := reconciletest.LeaderClient.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod still there: %v", err)
		}
		return nil
	})
	testenv.Converges(t, "the Listener reconciled without its pod", func() error {
		_, err := reconciletest.Reconciles.Quiet(ControllerName, lkey, before)
		return err
	})
	sharedService(t, c, ns, name, key, map[string]int32{"http": 9005})
	reconciletest.WaitReason(t, ctx, c, ns, name, reason)

	old := &corev1.Service{}
	hold(t, c, svcKey, old)
	l := recreate(t, c, ns, name, listener())
	svc := &corev1.Service{}
	controlledBy(t, c, svcKey, svc, l)
	if svc.UID != first.UID {
		t.Errorf("Service uid %s, want the predecessor's %s", svc.UID, first.UID)
	}
	if refs := svc.OwnerReferences; len(refs) != 1 {
		t.Errorf("owner references %+v, want only the recreated Listener", refs)
	}
	now := sharedService(t, c, ns, name, key, map[string]int32{"http": 9005})
	if !reflect.DeepEqual(now.Spec.Ports, old.Spec.Ports) {
		t.Errorf("ports %+v, want the predecessor's %+v", now.Spec.Ports, old.Spec.Ports)
	}
	got := reconciletest.WaitReason(t, ctx, c, ns, name, reason)
	if r, _ := reconciletest.ReadyReason(got); r == v1alpha1.ReasonAwaitingWorkload {
		t.Errorf("the recreated Listener reads %s: %s", r, readyMessage(got))
	}
}
