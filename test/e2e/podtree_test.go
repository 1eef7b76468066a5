//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestTreeMatchesPodListeners: on the real nodes, what a pod reads from
// /stackable/listener is what its PodListeners says, for a ClusterIP, a
// NodePort and a LoadBalancer Listener: both come from one rule
// (addresses.ForPod, issue 38).
func TestTreeMatchesPodListeners(t *testing.T) {
	ctx := t.Context()
	for _, typ := range []v1alpha1.ServiceType{v1alpha1.ServiceTypeClusterIP, v1alpha1.ServiceTypeNodePort, v1alpha1.ServiceTypeLoadBalancer} {
		t.Run(string(typ), func(t *testing.T) {
			class := "e2e-tree-" + strings.ToLower(string(typ))
			ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{ServiceType: typ, PreferredAddressType: v1alpha1.PreferredAddressIP}))
			ns := namespace(t, ctx, "e2e-tree")
			if err := k8s.client.Create(ctx, demoStatefulSet(ns, "web", class, 1)); err != nil {
				t.Fatalf("create StatefulSet: %v", err)
			}
			if typ == v1alpha1.ServiceTypeLoadBalancer {
				// Hand-made (hack/cluster/settings.sh); the class sets no
				// loadBalancerClass, so MetalLB leaves this Service alone.
				giveLoadBalancerAddress(t, ctx, ns, "listener-web-0", "10.88.0.235")
			}
			pod := podsReady(t, ctx, ns, "web", 1, podTimeout)["web-0"]
			files := tree(t, ctx, ns, pod.Name)
			want := podListenersEntry(t, ctx, pod)
			if got := treeAddresses(files); got != want {
				t.Errorf("the pod reads\n%s\nits PodListeners says\n%s", got, want)
			}
		})
	}
}

// giveLoadBalancerAddress plays the load balancer: once the Listener's
// Service exists, its status gets ip (in the cluster's pod subnet, outside
// the range pods get; nothing is sent there).
func giveLoadBalancerAddress(t *testing.T, ctx context.Context, ns, listener, ip string) {
	t.Helper()
	var svc corev1.Service
	eventually(t, ctx, podTimeout, "the Listener has a Service", func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: listener}, &l); err != nil || l.Status.ServiceName == "" {
			return false, "no Listener with a Service yet"
		}
		return k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &svc) == nil, "service " + l.Status.ServiceName
	})
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"`+ip+`"}]}}}`))
	if err := k8s.client.Status().Patch(ctx, &svc, patch); err != nil {
		t.Fatalf("set the Service's load balancer ingress: %v", err)
	}
}

// podListenersEntry renders the pod's PodListeners entry for its listener
// volume as treeAddresses does a tree, once it has one.
func podListenersEntry(t *testing.T, ctx context.Context, pod *corev1.Pod) string {
	t.Helper()
	var out string
	eventually(t, ctx, podTimeout, "the pod's PodListeners entry", func(ctx context.Context) (bool, string) {
		var pl v1alpha1.PodListeners
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: names.PodListenersName(pod.UID)}, &pl); err != nil {
			return false, err.Error()
		}
		entry, ok := pl.Spec.Listeners[v1alpha1.VolumeName]
		if !ok || len(entry.IngressAddresses) == 0 {
			return false, fmt.Sprintf("entries %v", pl.Spec.Listeners)
		}
		var lines []string
		for _, a := range entry.IngressAddresses {
			for p, n := range a.Ports {
				lines = append(lines, fmt.Sprintf("%s %s=%d", a.Address, p, n))
			}
		}
		sort.Strings(lines)
		out = strings.Join(lines, "\n")
		return true, ""
	})
	return out
}

// treeAddresses renders a pod's tree (tree) as "<address> <port>=<n>"
// lines, sorted.
func treeAddresses(files map[string]string) string {
	var lines []string
	for path, content := range files {
		parts := strings.Split(path, "/")
		if len(parts) != 4 || parts[0] != "addresses" || parts[2] != "ports" {
			continue
		}
		n, _ := strconv.Atoi(content)
		lines = append(lines, fmt.Sprintf("%s %s=%d", files["addresses/"+parts[1]+"/address"], parts[3], n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
