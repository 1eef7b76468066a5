//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 40: a class with a node port range gives replica i of a
// StatefulSet the port from+i; deleting the namespace and applying the same
// manifests again (a cluster rebuilt from git) gives the same ports.
func TestNodePortRangeSurvivesRebuild(t *testing.T) {
	ctx := t.Context()
	const from = 30040 // the static band of the cluster's 30000-32767
	ensureClass(t, ctx, listenerClass("e2e-nodeport-range", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		NodePortRange: &v1alpha1.NodePortRange{From: from, To: from + 19},
	}))
	ns := namespace(t, ctx, "e2e-range")
	deploy := func(round string) {
		t.Helper()
		if err := k8s.client.Create(ctx, demoStatefulSet(ns, "broker", "e2e-nodeport-range", 3)); err != nil {
			t.Fatalf("create StatefulSet: %v", err)
		}
		podsReady(t, ctx, ns, "broker", 3, podTimeout)
		for i := range 3 {
			pod := fmt.Sprintf("broker-%d", i)
			want := strconv.Itoa(from + i)
			if got := listener(t, ctx, ns, pod).Status.NodePorts["http"]; strconv.Itoa(int(got)) != want {
				t.Errorf("%s: the Listener of %s has node port %d, want %s (from + replica)", round, pod, got, want)
			}
			addr, port := defaultAddress(t, tree(t, ctx, ns, pod))
			if port != want {
				t.Errorf("%s: %s reads port %s, want %s", round, pod, port, want)
			}
			answers(t, ctx, addr, port, pod)
		}
	}
	deploy("first deploy")

	if err := k8s.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	eventually(t, ctx, podTimeout, "namespace "+ns+" gone", func(ctx context.Context) (bool, string) {
		err := k8s.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := k8s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace again: %v", err)
	}
	deploy("after the rebuild")
}

// Issue 40: clients reach a node through NAT at an address the node does
// not list. The administrator writes it into the node's annotation; the
// replica pinned to that node reads it from its volume, the Listener
// publishes it, and a client reaches the replica there (a DNAT rule on the
// host plays the NAT: kube-proxy answers node ports on the node's own
// address only).
func TestNodeAddressBehindNAT(t *testing.T) {
	ctx := t.Context()
	const natIP = "10.88.0.237" // hand-made: given to no pod, outside MetalLB's pool (hack/cluster/settings.sh)
	ensureClass(t, ctx, listenerClass("e2e-nodeport-nat", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		PinnedNodePorts: ptr.To(true), NodeAddress: v1alpha1.NodeAddressAnnotation,
	}))
	natted := natNode(t, ctx)
	setNodeAddress(t, ctx, natted.Name, natIP)
	dnat(t, ctx, natIP, nodeAddress(t, natted, corev1.NodeInternalIP))

	ns := namespace(t, ctx, "e2e-nat")
	if err := k8s.client.Create(ctx, spreadStatefulSet(ns, "edge", classAnnotation("e2e-nodeport-nat"), 2)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "edge", 2, podTimeout)
	seen := false
	for name, p := range pods {
		addr, port := defaultAddress(t, tree(t, ctx, ns, name))
		if p.Spec.NodeName != natted.Name {
			if addr == natIP {
				t.Errorf("%s on node %s reads the other node's NAT address %s", name, p.Spec.NodeName, natIP)
			}
			continue
		}
		seen = true
		if addr != natIP {
			t.Fatalf("%s on node %s reads %s, want the node's annotated address %s", name, natted.Name, addr, natIP)
		}
		if l := listener(t, ctx, ns, name); !strings.Contains(strings.Join(ingressSet(l), " "), natIP+":"+port) {
			t.Errorf("the Listener of %s publishes %v, want %s:%s", name, ingressSet(l), natIP, port)
		}
		answers(t, ctx, natIP, port, name)
	}
	if !seen {
		t.Fatalf("no replica landed on node %s", natted.Name)
	}
}

// setNodeAddress annotates node with the address clients reach it on, as
// an administrator does, and removes it when the test ends.
func setNodeAddress(t *testing.T, ctx context.Context, node, address string) {
	t.Helper()
	annotateNodeAddress(t, ctx, node, strconv.Quote(address))
	t.Cleanup(func() { annotateNodeAddress(t, context.WithoutCancel(ctx), node, "null") })
}

// natNode is a real node other than the host's own: a DNAT in the host's
// OUTPUT chain to the host's address would skip kube-proxy's rules.
func natNode(t *testing.T, ctx context.Context) *corev1.Node {
	t.Helper()
	for _, n := range realNodes(t, ctx) {
		if nodeAddress(t, &n, corev1.NodeInternalIP) != "10.88.0.1" {
			return &n
		}
	}
	t.Fatal("no node other than the host's")
	return nil
}

// dnat sends the host's connections to ip on to the node's address until
// the test ends.
func dnat(t *testing.T, ctx context.Context, ip, nodeIP string) {
	t.Helper()
	rule := []string{"OUTPUT", "-d", ip + "/32", "-p", "tcp", "-j", "DNAT", "--to-destination", nodeIP}
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-t", "nat", "-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables -t nat -I %v: %v: %s", rule, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("iptables", append([]string{"-t", "nat", "-D"}, rule...)...).Run() })
}

// annotateNodeAddress sets the node's address annotation to value (a JSON
// string, or null to remove it), as an administrator does.
func annotateNodeAddress(t *testing.T, ctx context.Context, node, value string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1alpha1.AnnotationNodeAddress+`":`+value+`}}}`))
	if err := k8s.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, patch); err != nil {
		t.Fatalf("annotate node %s: %v", node, err)
	}
}
