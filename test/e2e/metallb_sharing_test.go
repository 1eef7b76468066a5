//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// metallbPoolListeners is MetalLB's main pool (.240–.253): a sharing class
// names one pool, so that every Service of a sharing key asks the same one.
const metallbPoolListeners = "listeners"

// Issue 51, part 2: three replicas, one IP. A 3-replica StatefulSet on a
// class with spec.loadBalancerSharing: every replica reads the same IP of
// MetalLB's pool and its own port, from + i; a client that only ARP leads
// there reaches each replica at IP:port; a deleted replica comes back on
// the same IP and port; another StatefulSet on the class gets another IP
// (its own sharing key).
func TestMetalLBSharing(t *testing.T) {
	ctx := t.Context()
	requireMetalLB(t, ctx)
	const from = 9000
	name := sharingClass(t, ctx, "e2e-metallb-share", from)
	ns := namespace(t, ctx, "e2e-metallb-share")
	poolSettled(t, ctx)
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "kafka", name, 3)); err != nil {
		t.Fatalf("create StatefulSet kafka: %v", err)
	}
	pods := podsReady(t, ctx, ns, "kafka", 3, podTimeout)

	ip := ""
	for i := range 3 {
		pod := fmt.Sprintf("kafka-%d", i)
		addr, port := sharedAddress(t, ctx, ns, pod)
		if ip == "" {
			ip = addr
		}
		if !inPool(addr) || addr != ip || port != strconv.Itoa(from+i) {
			t.Fatalf("%s reads %s port %s, want kafka-0's %s (of MetalLB's pool) and port %d (from + %d)", pod, addr, port, ip, from+i, i)
		}
		t.Logf("%s reads %s:%s", pod, addr, port)
	}
	l2 := newL2Client(t, ctx)
	for i := range 3 {
		pod := fmt.Sprintf("kafka-%d", i)
		l2.answers(t, ctx, ip, strconv.Itoa(from+i), pod)
		t.Logf("the L2 client reaches %s (on %s) at %s:%d", pod, pods[pod].Spec.NodeName, ip, from+i)
	}
	node := oneAnnouncer(t, ctx, l2, ns, ip, strconv.Itoa(from), "kafka-0", "kafka-1", "kafka-2")
	t.Logf("%s is announced by %s for the three Services", ip, node)

	old := pods["kafka-1"]
	if err := k8s.client.Delete(ctx, old); err != nil {
		t.Fatalf("delete pod kafka-1: %v", err)
	}
	eventually(t, ctx, podTimeout, "kafka-1 comes back (a new pod)", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, clientKey(ns, "kafka-1"), &p); err != nil {
			return false, err.Error()
		}
		return p.UID != old.UID && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(&p),
			fmt.Sprintf("uid %s (old %s), %s", p.UID, old.UID, podState(&p))
	})
	if addr, port := sharedAddress(t, ctx, ns, "kafka-1"); addr != ip || port != strconv.Itoa(from+1) {
		t.Fatalf("the new kafka-1 reads %s port %s, want %s port %d (as before it was deleted)", addr, port, ip, from+1)
	}
	l2.answers(t, ctx, ip, strconv.Itoa(from+1), "kafka-1")
	t.Logf("the new kafka-1 reads and answers at %s:%d again", ip, from+1)

	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "zk", name, 1)); err != nil {
		t.Fatalf("create StatefulSet zk: %v", err)
	}
	podsReady(t, ctx, ns, "zk", 1, podTimeout)
	zk, zkPort := sharedAddress(t, ctx, ns, "zk-0")
	if !inPool(zk) || zk == ip || zkPort != strconv.Itoa(from) {
		t.Fatalf("zk-0 reads %s port %s, want an address of MetalLB's pool other than kafka's %s, port %d", zk, zkPort, ip, from)
	}
	t.Logf("zk-0 reads %s:%s", zk, zkPort)
	l2.answers(t, ctx, zk, zkPort, "zk-0")
	l2.answers(t, ctx, ip, strconv.Itoa(from), "kafka-0")
}

// sharedAddress is what pod reads in its volume (address and http port),
// once its Listener publishes the same, its Service has that address from
// MetalLB and the Listener says it shares it.
func sharedAddress(t *testing.T, ctx context.Context, ns, pod string) (string, string) {
	t.Helper()
	addr, port := defaultAddress(t, tree(t, ctx, ns, pod))
	eventually(t, ctx, time.Minute, pod+"'s Listener publishes what the pod reads and shares its IP", func(ctx context.Context) (bool, string) {
		l := &v1alpha1.Listener{}
		if err := k8s.client.Get(ctx, clientKey(ns, v1alpha1.VolumeName+"-"+pod), l); err != nil {
			return false, err.Error()
		}
		got := ingressSet(l)
		shared := false
		for _, c := range l.Status.Conditions {
			if c.Type == v1alpha1.ConditionLoadBalancerShared {
				shared = c.Reason == v1alpha1.ReasonShared
			}
		}
		return slices.Equal(got, []string{addr + ":" + port}) && shared,
			fmt.Sprintf("publishes %v (pod reads %s:%s), conditions %v", got, addr, port, l.Status.Conditions)
	})
	l := listener(t, ctx, ns, pod)
	if got := ingressIP(t, ctx, ns, l.Status.ServiceName); got != addr {
		t.Fatalf("%s reads %s, its Service %s has %s from MetalLB", pod, addr, l.Status.ServiceName, got)
	}
	return addr, port
}

// oneAnnouncer waits until MetalLB's speakers announce ip from one node for
// the Services of all pods' Listeners (one IP answered by two nodes would
// make clients' ARP entries flap) and the client, asking ip:port, resolves
// ip to that node's MAC; it returns the node.
func oneAnnouncer(t *testing.T, ctx context.Context, l2 *l2Client, ns, ip, port string, pods ...string) string {
	t.Helper()
	var svcs []string
	for _, pod := range pods {
		svcs = append(svcs, listener(t, ctx, ns, pod).Status.ServiceName)
	}
	var node string
	eventually(t, ctx, 90*time.Second, "one node announces "+ip+" for every Service and the client resolves it to that node's MAC", func(ctx context.Context) (bool, string) {
		var nodes []string
		for _, svc := range svcs {
			nodes = append(nodes, announcer(ctx, ns, svc))
		}
		node = nodes[0]
		if node == "" || slices.ContainsFunc(nodes, func(n string) bool { return n != node }) {
			return false, fmt.Sprintf("announcing nodes of %v: %v", svcs, nodes)
		}
		mac := nodeMAC(t, ctx, node)
		_, _ = l2.get(ctx, ip, port) // a request refreshes the neighbour entry
		got := l2.neighbour(ctx, ip)
		return got == mac, fmt.Sprintf("announced by %s (%s), the client resolves %s to %s", node, mac, ip, got)
	})
	return node
}

// poolSettled waits until no Service of MetalLB's class is in a namespace
// being deleted (earlier tests'): MetalLB gives a Service the lowest
// address of the pool its sharing key allows, and a free one is allowed,
// so an address freed between two replicas' Services would split the key
// over two IPs (SharingRefused; see the report of issue 51's e2e).
func poolSettled(t *testing.T, ctx context.Context) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "no Service of MetalLB's class in a namespace being deleted", func(ctx context.Context) (bool, string) {
		var svcs corev1.ServiceList
		if err := k8s.client.List(ctx, &svcs); err != nil {
			return false, err.Error()
		}
		for _, s := range svcs.Items {
			if ptr.Deref(s.Spec.LoadBalancerClass, "") != metallbClass {
				continue
			}
			var ns corev1.Namespace
			if err := k8s.client.Get(ctx, client.ObjectKey{Name: s.Namespace}, &ns); err != nil || ns.DeletionTimestamp != nil {
				return false, fmt.Sprintf("Service %s/%s: namespace %v", s.Namespace, s.Name, err)
			}
		}
		return true, ""
	})
}

// sharingClass creates a class of MetalLB's load-balancer class, pool
// listeners, sharing ports from..from+9, named prefix and a random suffix,
// deleted when the test ends; it returns its name.
func sharingClass(t *testing.T, ctx context.Context, prefix string, from int32) string {
	t.Helper()
	class := listenerClass(prefix+"-"+rand.String(5), v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(metallbClass),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
		LoadBalancerSharing:  &v1alpha1.LoadBalancerSharing{From: from, To: from + 9},
		ServiceAnnotations:   map[string]string{"metallb.io/address-pool": metallbPoolListeners},
	})
	if err := k8s.client.Create(ctx, class); err != nil {
		t.Fatalf("create ListenerClass: %v", err)
	}
	t.Cleanup(func() { _ = k8s.client.Delete(context.WithoutCancel(ctx), class) })
	return class.Name
}
