//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 51: a Listener of a LoadBalancer class whose loadBalancerClass is
// MetalLB's gets an address of MetalLB's pool; the pod reads it in its
// volume and a client that only ARP leads there reaches the pod at it. Its
// Service deleted, the operator makes it again and the Listener publishes
// the address MetalLB gives the new one (docs/reconcile.md: the operator
// does not ask for the old one; MetalLB's allocator usually gives the
// lowest free address again).
func TestMetalLBListener(t *testing.T) {
	ctx := t.Context()
	requireMetalLB(t, ctx)
	ensureClass(t, ctx, listenerClass("e2e-metallb", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(metallbClass),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-metallb")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "lb", "e2e-metallb", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	podsReady(t, ctx, ns, "lb", 1, podTimeout)
	addr, port := defaultAddress(t, tree(t, ctx, ns, "lb-0"))
	if !inPool(addr) {
		t.Fatalf("lb-0 reads %s, want an address of MetalLB's pool", addr)
	}
	l := listener(t, ctx, ns, "lb-0")
	if ip := ingressIP(t, ctx, ns, l.Status.ServiceName); ip != addr {
		t.Errorf("lb-0 reads %s, its Service has %s from MetalLB", addr, ip)
	}
	if got := ingressSet(l); !slices.Contains(got, addr+":"+port) {
		t.Errorf("the Listener publishes %v, want %s:%s (what the pod reads)", got, addr, port)
	}
	client := newL2Client(t, ctx)
	client.answers(t, ctx, addr, port, "lb-0")

	var old corev1.Service
	if err := k8s.client.Get(ctx, clientKey(ns, l.Status.ServiceName), &old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.client.Delete(ctx, &old); err != nil {
		t.Fatalf("delete Service %s: %v", old.Name, err)
	}
	var again string
	eventually(t, ctx, time.Minute, "the Service is made again with an address of the pool, and the Listener publishes it", func(ctx context.Context) (bool, string) {
		var svc corev1.Service
		if err := k8s.client.Get(ctx, clientKey(ns, old.Name), &svc); err != nil || svc.UID == old.UID || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, fmt.Sprintf("Service: %v, uid %s (old %s), ingress %v", err, svc.UID, old.UID, svc.Status.LoadBalancer.Ingress)
		}
		again = svc.Status.LoadBalancer.Ingress[0].IP
		got := ingressSet(listener(t, ctx, ns, "lb-0"))
		return inPool(again) && slices.Contains(got, again+":"+port), fmt.Sprintf("Service has %s, the Listener publishes %v", again, got)
	})
	t.Logf("address before the Service was deleted: %s, after: %s", addr, again)
	client.answers(t, ctx, again, port, "lb-0")
}

// Issue 51: a pool with no address left. Two Listeners of a class whose
// Services ask for MetalLB's one-address pool tiny: one gets its address,
// the other's Ready condition quotes why it gets none (MetalLB's
// AllocationFailed event).
func TestMetalLBPoolExhausted(t *testing.T) {
	ctx := t.Context()
	requireMetalLB(t, ctx)
	ensureClass(t, ctx, listenerClass("e2e-metallb-tiny", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(metallbClass),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
		ServiceAnnotations:   map[string]string{"metallb.io/address-pool": metallbTinyPool},
	}))
	ns := namespace(t, ctx, "e2e-metallb-full")
	for _, name := range []string{"a", "b"} {
		l := plainListener(ns, name, "e2e-metallb-tiny")
		if err := k8s.client.Create(ctx, l); err != nil {
			t.Fatalf("create Listener %s: %v", name, err)
		}
		// The pool's one address is free again when the test ends, not
		// when its namespace is gone: the next run needs it.
		t.Cleanup(func() {
			ctx := context.WithoutCancel(ctx)
			_ = k8s.client.Delete(ctx, l)
			eventually(t, ctx, time.Minute, "Service "+name+" gone", func(ctx context.Context) (bool, string) {
				err := k8s.client.Get(ctx, clientKey(ns, name), &corev1.Service{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
		})
	}
	var msg string
	eventually(t, ctx, time.Minute, "one Listener has the tiny pool's address, the other says the pool is full", func(ctx context.Context) (bool, string) {
		var got []string
		waiting := 0
		for _, name := range []string{"a", "b"} {
			var l v1alpha1.Listener
			if err := k8s.client.Get(ctx, clientKey(ns, name), &l); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
			switch {
			case c == nil:
				got = append(got, name+": no condition")
			case c.Status == metav1.ConditionTrue && slices.Equal(ingressSet(&l), []string{"10.88.0.254:8080"}):
				got = append(got, name+": ready")
			case c.Reason == v1alpha1.ReasonAwaitingLoadBalancer && strings.Contains(c.Message, "AllocationFailed"):
				waiting++
				msg = c.Message
				got = append(got, name+": pool full")
			default:
				got = append(got, fmt.Sprintf("%s: %s %s %v", name, c.Reason, c.Message, ingressSet(&l)))
			}
		}
		return waiting == 1 && slices.Contains(got, "a: ready") != slices.Contains(got, "b: ready"), strings.Join(got, "; ")
	})
	t.Logf("the Listener without an address says: %s", msg)
}

// Issue 51: a class whose loadBalancerClass changes. spec.loadBalancerClass
// cannot change on a Service, so the operator makes its Listeners'
// Services again: a class first named a load balancer that serves nothing
// here, then MetalLB's, and its Listener gets an address of the pool.
func TestMetalLBClassChange(t *testing.T) {
	ctx := t.Context()
	requireMetalLB(t, ctx)
	name := "e2e-metallb-move-" + rand.String(5)
	class := listenerClass(name, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("listeners.test/nobody"),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
	})
	if err := k8s.client.Create(ctx, class); err != nil {
		t.Fatalf("create ListenerClass: %v", err)
	}
	t.Cleanup(func() { _ = k8s.client.Delete(context.WithoutCancel(ctx), class) })
	ns := namespace(t, ctx, "e2e-metallb-move")
	if err := k8s.client.Create(ctx, plainListener(ns, "web", name)); err != nil {
		t.Fatalf("create Listener: %v", err)
	}
	var first corev1.Service
	eventually(t, ctx, time.Minute, "the Listener waits for a load balancer that never comes", func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, clientKey(ns, "web"), &l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonAwaitingLoadBalancer {
			return false, fmt.Sprintf("condition %+v", c)
		}
		return k8s.client.Get(ctx, clientKey(ns, "web"), &first) == nil, "no Service yet"
	})

	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.LoadBalancerClass = ptr.To(metallbClass)
	if err := k8s.client.Patch(ctx, class, patch); err != nil {
		t.Fatalf("change the class's loadBalancerClass: %v", err)
	}
	eventually(t, ctx, time.Minute, "the Service is made again for MetalLB and the Listener publishes its address", func(ctx context.Context) (bool, string) {
		var svc corev1.Service
		if err := k8s.client.Get(ctx, clientKey(ns, "web"), &svc); err != nil {
			return false, err.Error()
		}
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, clientKey(ns, "web"), &l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		got := ingressSet(&l)
		ok := svc.UID != first.UID && ptr.Deref(svc.Spec.LoadBalancerClass, "") == metallbClass && len(got) == 1 && inPool(strings.TrimSuffix(got[0], ":8080"))
		return ok && c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("Service uid %s (first %s) class %s; Listener %v, condition %+v",
			svc.UID, first.UID, ptr.Deref(svc.Spec.LoadBalancerClass, ""), got, c)
	})
	var evs corev1.EventList
	if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	said := false
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Listener" && e.InvolvedObject.Name == "web" && e.Reason == "ServiceDeleted" {
			said = strings.Contains(e.Message, metallbClass)
			t.Logf("event about the Listener: %s: %s", e.Reason, e.Message)
		}
	}
	if !said {
		t.Errorf("no ServiceDeleted event about Listener web names the new loadBalancerClass %s", metallbClass)
	}
}

// plainListener is a Listener of class with one port, http 8080, that no
// pod mounts.
func plainListener(ns, name, class string) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class),
			Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080}}},
	}
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
