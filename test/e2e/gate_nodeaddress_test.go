//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 50: a NodePort Listener's address changes under a running gated
// pod. The class reads the node's address annotation; the administrator
// changes it: the pod, which advertises the address it started with,
// turns not Ready (AddressesChanged, and the message says to restart it);
// deleted, it comes back Ready, reading and answering at the new address.
// DNAT rules on the host play the NAT of both addresses
// (TestNodeAddressBehindNAT).
func TestReadinessGateNodeAddressChange(t *testing.T) {
	ctx := t.Context()
	// Hand-made addresses (hack/cluster/settings.sh: given to no pod and
	// outside MetalLB's pool), and not the ones other tests play with.
	const before, after = "10.88.0.230", "10.88.0.231"
	ensureClass(t, ctx, listenerClass("e2e-gate-nodeaddress", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		PinnedNodePorts: ptr.To(true), NodeAddress: v1alpha1.NodeAddressAnnotation,
		PodReadiness: ptr.To(v1alpha1.PodReadinessGate),
	}))
	node := natNode(t, ctx)
	nodeIP := nodeAddress(t, node, corev1.NodeInternalIP)
	for _, ip := range []string{before, after} {
		dnat(t, ctx, ip, nodeIP)
	}
	keepNodeAddress(t, ctx, node)
	annotateNodeAddress(t, ctx, node.Name, strconv.Quote(before))

	ns := namespace(t, ctx, "e2e-gate-addr")
	sts := demoStatefulSet(ns, "edge", "e2e-gate-nodeaddress", 1)
	sts.Spec.Template.Spec.NodeSelector = map[string]string{hostnameLabel: node.Name}
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	first := podsReady(t, ctx, ns, "edge", 1, podTimeout)["edge-0"]
	addr, port := defaultAddress(t, tree(t, ctx, ns, "edge-0"))
	if addr != before {
		t.Fatalf("edge-0 on %s reads %s, want the node's annotated address %s", node.Name, addr, before)
	}
	answers(t, ctx, addr, port, "edge-0")

	annotateNodeAddress(t, ctx, node.Name, strconv.Quote(after))
	eventually(t, ctx, podTimeout, "edge-0 not Ready, AddressesChanged", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge-0"}, &p); err != nil {
			return false, err.Error()
		}
		if p.UID != first.UID {
			return false, "edge-0 was replaced; nothing should restart it (addressChange.restartPods is off)"
		}
		return heldBy(&p, v1alpha1.ReasonAddressesChanged)
	})
	msg := gateCondition(gatedPod(t, ctx, ns, "edge-0")).Message
	for _, want := range []string{before, after, "restart the pod"} {
		if !strings.Contains(msg, want) {
			t.Errorf("edge-0's condition message %q does not say %q", msg, want)
		}
	}

	if err := k8s.client.Delete(ctx, first); err != nil {
		t.Fatalf("delete edge-0: %v", err)
	}
	runningPod(t, ctx, ns, "edge-0", first.UID)
	addr, port = defaultAddress(t, tree(t, ctx, ns, "edge-0"))
	if addr != after {
		t.Fatalf("the new edge-0 reads %s, want the node's new address %s", addr, after)
	}
	if c := gateCondition(gatedPod(t, ctx, ns, "edge-0")); c.Reason != v1alpha1.ReasonAddressesReady {
		t.Errorf("the new edge-0's condition is %s %s, want True %s", c.Status, c.Reason, v1alpha1.ReasonAddressesReady)
	}
	answers(t, ctx, addr, port, "edge-0")
}

// Issue 50: a shared NodePort Listener with publishNotReadyAddresses
// false publishes only Ready pods' nodes, so it is not Ready (NoNodes)
// until a pod is. The gate does not wait for it (podready: a pod told its
// own node's address): its pod turns Ready, and then the Listener
// publishes that node. Not covered by envtest (api/podready's unit test
// only).
func TestReadinessGateNodePortNotReadyAddresses(t *testing.T) {
	ctx := t.Context()
	const class = "e2e-gate-nodeport"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		PodReadiness: ptr.To(v1alpha1.PodReadinessGate),
	}))
	ns := namespace(t, ctx, "e2e-gate-np")
	shared := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{
			ClassName:                ptr.To(class),
			PublishNotReadyAddresses: ptr.To(false),
			Ports:                    []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := k8s.client.Create(ctx, shared); err != nil {
		t.Fatalf("create Listener: %v", err)
	}
	sts := demoStatefulSet(ns, "hello", "", 1)
	sts.Annotations = map[string]string{v1alpha1.AnnotationListenerName: "shared"}
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	p := podsReady(t, ctx, ns, "hello", 1, podTimeout)["hello-0"]
	if c := gateCondition(gatedPod(t, ctx, ns, "hello-0")); c.Reason != v1alpha1.ReasonAddressesReady {
		t.Errorf("hello-0's condition is %s %s, want True %s", c.Status, c.Reason, v1alpha1.ReasonAddressesReady)
	}
	addr, port := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
	if want := nodeAddress(t, nodeByName(t, realNodes(t, ctx), p.Spec.NodeName), corev1.NodeInternalIP); addr != want {
		t.Errorf("hello-0 on %s reads %s, want its node's address %s", p.Spec.NodeName, addr, want)
	}
	listenerIngressIs(t, ctx, ns, "shared", addr+":"+port)
	answers(t, ctx, addr, port, "hello-0")
}

// keepNodeAddress puts the node's address annotation back as it is now
// (or removes it) when the test ends: other tests share the nodes.
func keepNodeAddress(t *testing.T, ctx context.Context, node *corev1.Node) {
	t.Helper()
	value := "null"
	if v, ok := node.Annotations[v1alpha1.AnnotationNodeAddress]; ok {
		value = strconv.Quote(v)
	}
	t.Cleanup(func() { annotateNodeAddress(t, context.WithoutCancel(ctx), node.Name, value) })
}
