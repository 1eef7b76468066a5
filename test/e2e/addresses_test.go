//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 25: a LoadBalancer's ingress changes under a running replica. The
// class publishes a DNS name (external-dns annotation, default address)
// and asks for restarts: the replica gets an event, is evicted, and comes
// back reading the new address.
func TestAddressChangeRestartsReplica(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("e2e-address-change", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, PreferredAddressType: v1alpha1.PreferredAddressIP,
		AddressChange: &v1alpha1.AddressChangePolicy{RestartPods: ptr.To(true)},
		Hostname:      &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.e2e.example.test"},
	}))
	ns := namespace(t, ctx, "e2e-addrchange")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "lb", "e2e-address-change", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	var svc corev1.Service
	eventually(t, ctx, podTimeout, "the replica's Listener has a Service", func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener-lb-0"}, &l); err != nil || l.Status.ServiceName == "" {
			return false, "no Listener with a Service yet"
		}
		return k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &svc) == nil, "service " + l.Status.ServiceName
	})
	host := "listener-lb-0." + ns + ".e2e.example.test"
	if got := svc.Annotations[v1alpha1.AnnotationExternalDNSHostname]; got != host {
		t.Errorf("Service annotation %s = %q, want %q", v1alpha1.AnnotationExternalDNSHostname, got, host)
	}
	setIngress := func(ip string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"`+ip+`"}]}}}`))
		if err := k8s.client.Status().Patch(ctx, &svc, patch); err != nil {
			t.Fatalf("set the Service's load balancer ingress: %v", err)
		}
	}
	// Hand-made addresses (hack/cluster/settings.sh: given to no pod and
	// outside MetalLB's pool; the Service has no loadBalancerClass, so
	// MetalLB leaves its status alone); nothing is sent there.
	setIngress("10.88.0.234")
	first := podsReady(t, ctx, ns, "lb", 1, podTimeout)["lb-0"]
	files := tree(t, ctx, ns, "lb-0")
	if addr, port := defaultAddress(t, files); addr != host || port != "8080" {
		t.Errorf("lb-0 reads %s:%s as its default address, want the class's DNS name %s:8080", addr, port, host)
	}
	if files["addresses/10.88.0.234/address"] != "10.88.0.234" {
		t.Errorf("lb-0's tree lacks the load balancer's address: %v", files)
	}

	setIngress("10.88.0.235")
	eventually(t, ctx, podTimeout, "lb-0 gets a ListenerAddressChanged event", func(ctx context.Context) (bool, string) {
		var evs eventsv1.EventList
		if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.Regarding.UID == first.UID && ev.Reason == "ListenerAddressChanged" {
				return true, ev.Note
			}
		}
		return false, fmt.Sprintf("%d events, none about the change", len(evs.Items))
	})
	eventually(t, ctx, podTimeout, "lb-0 evicted and back", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lb-0"}, &p); err != nil {
			return false, err.Error()
		}
		return p.UID != first.UID && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(&p), podState(&p)
	})
	files = tree(t, ctx, ns, "lb-0")
	if files["addresses/10.88.0.235/address"] != "10.88.0.235" || files["addresses/10.88.0.234/address"] != "" {
		t.Errorf("the new lb-0 reads %v, want the new load balancer address 10.88.0.235 and not the old one", files)
	}
}

// Issue 25: the Service of a Ready NodePort Listener is deleted; the one
// made anew has the same node ports, so the pod's host:port still answers
// and the Listener publishes the same address.
func TestStickyNodePortsServiceRecreated(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("e2e-nodeport-sticky", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-sticky")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "hello", "e2e-nodeport-sticky", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	podsReady(t, ctx, ns, "hello", 1, podTimeout)
	addr, port := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
	answers(t, ctx, addr, port, "hello-0")
	before := listener(t, ctx, ns, "hello-0").Status.NodePorts

	old := listenerService(t, ctx, ns, "hello-0")
	if err := k8s.client.Delete(ctx, old); err != nil {
		t.Fatalf("delete Service: %v", err)
	}
	eventually(t, ctx, podTimeout, "the Service made anew", func(ctx context.Context) (bool, string) {
		var s corev1.Service
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(old), &s); err != nil {
			return false, err.Error()
		}
		return s.UID != old.UID, "still the old Service"
	})
	svc := listenerService(t, ctx, ns, "hello-0")
	for _, p := range svc.Spec.Ports {
		if p.NodePort != before[p.Name] {
			t.Errorf("new Service port %s has node port %d, want the recorded %d", p.Name, p.NodePort, before[p.Name])
		}
	}
	if l := listener(t, ctx, ns, "hello-0"); !hasIngress(l, addr, port) {
		t.Errorf("the Listener advertises %+v, want still %s:%s", l.Status.IngressAddresses, addr, port)
	}
	if a, p := defaultAddress(t, tree(t, ctx, ns, "hello-0")); a != addr || p != port {
		t.Errorf("hello-0 reads %s:%s, want still %s:%s", a, p, addr, port)
	}
	answers(t, ctx, addr, port, "hello-0")
}
