//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The cross-node scenarios run real pods on at least two real nodes of the
// local cluster (`make e2e` starts two: listener-node-1 on the host,
// listener-node-2 in its own network namespace, each with its own address).

const hostnameLabel = "kubernetes.io/hostname"

// realNodes returns the cluster's Ready nodes that run kubelet (not kwok's),
// sorted by name, and fails the test when there are fewer than two.
func realNodes(t *testing.T, ctx context.Context) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := k8s.client.List(ctx, &list); err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var nodes []corev1.Node
	for _, n := range list.Items {
		if n.Annotations["kwok.x-k8s.io/node"] != "" || !nodeReady(&n) {
			continue
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	if len(nodes) < 2 {
		t.Fatalf("the cross-node scenarios need 2 Ready nodes, the cluster has %d: run `make e2e` (2 nodes) or `NODES=2 make cluster-up`", len(nodes))
	}
	return nodes
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeAddress is a node's address of the given type in its status.
func nodeAddress(t *testing.T, n *corev1.Node, typ corev1.NodeAddressType) string {
	t.Helper()
	for _, a := range n.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	t.Fatalf("node %s has no %s address: %v", n.Name, typ, n.Status.Addresses)
	return ""
}

func nodeByName(t *testing.T, nodes []corev1.Node, name string) *corev1.Node {
	t.Helper()
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	t.Fatalf("pod runs on node %q, which is not one of the Ready nodes", name)
	return nil
}

// spreadStatefulSet is the demo StatefulSet with one replica per node at most.
func spreadStatefulSet(ns, name string, annotations map[string]string, replicas int32) *appsv1.StatefulSet {
	sts := demoStatefulSet(ns, name, "", replicas)
	sts.Annotations = annotations
	sts.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			TopologyKey:   hostnameLabel,
		}},
	}}
	return sts
}

func classAnnotation(class string) map[string]string {
	return map[string]string{v1alpha1.AnnotationListenerClass: class}
}

// ingressSet renders a Listener's status addresses as sorted address:http-port strings.
func ingressSet(l *v1alpha1.Listener) []string {
	var out []string
	for _, in := range l.Status.IngressAddresses {
		out = append(out, in.Address+":"+strconv.Itoa(int(in.Ports["http"])))
	}
	sort.Strings(out)
	return out
}

// listenerIngressIs waits until the Listener's status lists exactly want
// (address:http-port strings).
func listenerIngressIs(t *testing.T, ctx context.Context, ns, name string, want ...string) {
	t.Helper()
	sort.Strings(want)
	eventually(t, ctx, time.Minute, fmt.Sprintf("Listener %s/%s advertises %v", ns, name, want), func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
			return false, err.Error()
		}
		got := ingressSet(&l)
		return slices.Equal(got, want), fmt.Sprintf("status.ingressAddresses = %v", got)
	})
}

// podListenersAddresses is what the pod's PodListeners object records for its
// listener volume, as address:http-port strings.
func podListenersAddresses(t *testing.T, ctx context.Context, pod *corev1.Pod) []string {
	t.Helper()
	var pl v1alpha1.PodListeners
	key := client.ObjectKey{Namespace: pod.Namespace, Name: names.PodListenersName(pod.UID)}
	if err := k8s.client.Get(ctx, key, &pl); err != nil {
		t.Fatalf("get PodListeners %s of pod %s: %v", key, pod.Name, err)
	}
	var out []string
	for _, l := range pl.Spec.Listeners {
		for _, in := range l.IngressAddresses {
			out = append(out, in.Address+":"+strconv.Itoa(int(in.Ports["http"])))
		}
	}
	sort.Strings(out)
	return out
}

// runningPod waits for a Running, Ready pod of that name that is not old (by UID).
func runningPod(t *testing.T, ctx context.Context, ns, name string, old types.UID) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	eventually(t, ctx, podTimeout, fmt.Sprintf("pod %s/%s running again", ns, name), func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return p.UID != old && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(&p),
			podState(&p) + " on " + p.Spec.NodeName
	})
	return &p
}

// A shared NodePort Listener mounted by two replicas on two nodes publishes
// both nodes' addresses, and each address answers with the pod on that node
// (externalTrafficPolicy Local). Node ports answer on node addresses only.
func TestNodesSharedListener(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nodes := realNodes(t, ctx)
	local := v1alpha1.TrafficPolicyLocal
	ensureClass(t, ctx, listenerClass("e2e-nodes-local", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		ServiceExternalTrafficPolicy: &local,
	}))
	ns := namespace(t, ctx, "e2e-shared")
	shared := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To("e2e-nodes-local"),
			Ports:     []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := k8s.client.Create(ctx, shared); err != nil {
		t.Fatalf("create Listener: %v", err)
	}
	sts := spreadStatefulSet(ns, "hello", map[string]string{v1alpha1.AnnotationListenerName: "shared"}, 2)
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "hello", 2, podTimeout)
	if pods["hello-0"].Spec.NodeName == pods["hello-1"].Spec.NodeName {
		t.Fatalf("both replicas run on %s; the anti-affinity should spread them", pods["hello-0"].Spec.NodeName)
	}

	var l v1alpha1.Listener
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, &l); err != nil {
		t.Fatalf("get Listener: %v", err)
	}
	nodePort := strconv.Itoa(int(l.Status.NodePorts["http"]))
	if nodePort == "0" {
		t.Fatalf("Listener shared has no node port for http: %+v", l.Status)
	}
	var want []string
	for _, p := range pods {
		want = append(want, nodeAddress(t, nodeByName(t, nodes, p.Spec.NodeName), corev1.NodeInternalIP)+":"+nodePort)
	}
	listenerIngressIs(t, ctx, ns, "shared", want...)

	for name, p := range pods {
		nodeIP := nodeAddress(t, nodeByName(t, nodes, p.Spec.NodeName), corev1.NodeInternalIP)
		addr, port := defaultAddress(t, tree(t, ctx, ns, name))
		if addr != nodeIP || port != nodePort {
			t.Errorf("pod %s on %s reads %s:%s, want its node's address %s:%s", name, p.Spec.NodeName, addr, port, nodeIP, nodePort)
		}
		// From the host. For the host's own node this is local traffic,
		// which kube-proxy may send to any endpoint even under Local
		// policy; each try opens a new connection, so the node's own pod
		// answers within a few tries.
		answers(t, ctx, nodeIP, nodePort, name)
	}
	// Only node addresses: not the host's loopback, not its gateway address
	// on the nodes' subnet.
	for _, addr := range []string{"127.0.0.1", "10.88.1.1"} {
		if body, err := httpGet(ctx, addr, nodePort); err == nil {
			t.Errorf("curl http://%s:%s/ answered %q; node ports must answer on node addresses only", addr, nodePort, body)
		}
	}
}

// A pinned replica on the second node, deleted, comes back on that node with
// the same address in its tree and in its Listener's status.
func TestNodesPinnedReplicaReturns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nodes := realNodes(t, ctx)
	ensureClass(t, ctx, listenerClass("e2e-nodes-pinned", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-pinned")
	if err := k8s.client.Create(ctx, spreadStatefulSet(ns, "hello", classAnnotation("e2e-nodes-pinned"), 2)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "hello", 2, podTimeout)
	for name, p := range pods {
		addr, port := defaultAddress(t, tree(t, ctx, ns, name))
		nodeIP := nodeAddress(t, nodeByName(t, nodes, p.Spec.NodeName), corev1.NodeInternalIP)
		if addr != nodeIP {
			t.Errorf("pod %s on %s reads address %s, want its node's %s", name, p.Spec.NodeName, addr, nodeIP)
		}
		listenerIngressIs(t, ctx, ns, v1alpha1.VolumeName+"-"+name, addr+":"+port)
		answers(t, ctx, addr, port, name)
	}

	// The replica that is not on the host's node.
	name := "hello-0"
	if pods[name].Spec.NodeName == nodes[0].Name {
		name = "hello-1"
	}
	old := pods[name]
	addr, port := defaultAddress(t, tree(t, ctx, ns, name))
	if err := k8s.client.Delete(ctx, old); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	p := runningPod(t, ctx, ns, name, old.UID)
	if p.Spec.NodeName != old.Spec.NodeName {
		t.Errorf("%s came back on %s, want its pinned node %s", name, p.Spec.NodeName, old.Spec.NodeName)
	}
	addr2, port2 := defaultAddress(t, tree(t, ctx, ns, name))
	if addr2+":"+port2 != addr+":"+port {
		t.Errorf("%s came back reading %s:%s, want the same %s:%s", name, addr2, port2, addr, port)
	}
	listenerIngressIs(t, ctx, ns, v1alpha1.VolumeName+"-"+name, addr+":"+port)
	answers(t, ctx, addr, port, name)
}

// An unpinned NodePort replica moved to another node republishes: its tree,
// its PodListeners and its Listener's status show the new node's address, and
// the old address is gone from the status.
func TestNodesUnpinnedReplicaMoves(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nodes := realNodes(t, ctx)
	from, to := &nodes[0], &nodes[1]
	ensureClass(t, ctx, listenerClass("e2e-nodes-unpinned", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(false),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-moves")
	sts := spreadStatefulSet(ns, "hello", classAnnotation("e2e-nodes-unpinned"), 1)
	sts.Spec.Template.Spec.NodeSelector = map[string]string{hostnameLabel: from.Name}
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	old := podsReady(t, ctx, ns, "hello", 1, podTimeout)["hello-0"]
	fromIP, toIP := nodeAddress(t, from, corev1.NodeInternalIP), nodeAddress(t, to, corev1.NodeInternalIP)
	addr, port := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
	if addr != fromIP {
		t.Fatalf("hello-0 on %s reads %s, want %s", from.Name, addr, fromIP)
	}
	if got := podListenersAddresses(t, ctx, old); !slices.Equal(got, []string{fromIP + ":" + port}) {
		t.Errorf("PodListeners of hello-0 on %s = %v, want [%s:%s]", from.Name, got, fromIP, port)
	}
	listenerName := v1alpha1.VolumeName + "-hello-0"
	listenerIngressIs(t, ctx, ns, listenerName, fromIP+":"+port)

	// Move it: the rolling update recreates the pod on the other node.
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, hostnameLabel, to.Name)
	if err := k8s.client.Patch(ctx, sts, client.RawPatch(types.StrategicMergePatchType, []byte(patch))); err != nil {
		t.Fatalf("move hello-0 to %s: %v", to.Name, err)
	}
	p := runningPod(t, ctx, ns, "hello-0", old.UID)
	if p.Spec.NodeName != to.Name {
		t.Fatalf("hello-0 runs on %s, want %s (unpinned: nothing holds it on %s)", p.Spec.NodeName, to.Name, from.Name)
	}
	addr, port2 := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
	if addr != toIP {
		t.Errorf("moved hello-0 reads %s:%s, want its new node's address %s", addr, port2, toIP)
	}
	if got := podListenersAddresses(t, ctx, p); !slices.Equal(got, []string{toIP + ":" + port2}) {
		t.Errorf("PodListeners of the moved hello-0 = %v, want [%s:%s]", got, toIP, port2)
	}
	listenerIngressIs(t, ctx, ns, listenerName, toIP+":"+port2)
	answers(t, ctx, toIP, port2, "hello-0")
}

// Hostname, IP and HostnameConservative classes each publish, per node, an
// address that answers from the host: Hostname gives the node's name, which
// resolves to that node's address on the host.
func TestNodesAddressTypes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	nodes := realNodes(t, ctx)
	ns := namespace(t, ctx, "e2e-addrtypes")
	cases := []struct {
		pref v1alpha1.PreferredAddressType
		want corev1.NodeAddressType // the node address the pods must read
	}{
		{v1alpha1.PreferredAddressHostname, corev1.NodeHostName},
		{v1alpha1.PreferredAddressIP, corev1.NodeInternalIP},
		// Conservative: NodePort classes publish IPs.
		{v1alpha1.PreferredAddressHostnameConservative, corev1.NodeInternalIP},
	}
	for _, c := range cases {
		class := "e2e-nodes-" + strings.ToLower(string(c.pref))
		ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
			ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true), PreferredAddressType: c.pref,
		}))
		if err := k8s.client.Create(ctx, spreadStatefulSet(ns, strings.ToLower(string(c.pref)), classAnnotation(class), 2)); err != nil {
			t.Fatalf("create StatefulSet: %v", err)
		}
	}
	for _, c := range cases {
		t.Run(string(c.pref), func(t *testing.T) {
			sts := strings.ToLower(string(c.pref))
			pods := podsReady(t, ctx, ns, sts, 2, podTimeout)
			for name, p := range pods {
				want := nodeAddress(t, nodeByName(t, nodes, p.Spec.NodeName), c.want)
				addr, port := defaultAddress(t, tree(t, ctx, ns, name))
				if addr != want {
					t.Errorf("pod %s on %s reads %s, want the node's %s address %s", name, p.Spec.NodeName, addr, c.want, want)
				}
				answers(t, ctx, addr, port, name)
			}
		})
	}
}
