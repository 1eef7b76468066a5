//go:build e2e

package e2e

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 40, both IP families on real nodes: on a dual-stack cluster
// (hack/cluster's default, IP_FAMILIES=dual) a NodePort class that requires both
// families gives every replica its node's IPv4 and IPv6 address in its
// listener volume, IPv4 as the default address (the class does not prefer
// IPv6), and a client reaches the replica's node port on each of them.
// One replica per node: node 1 is the host itself, node 2 is reached
// through the host's routes, in each family.
func TestDualStackNodePortOnRealNodes(t *testing.T) {
	ctx := t.Context()
	nodes := realNodes(t, ctx)
	for i := range nodes {
		if _, v6 := nodeIPs(&nodes[i]); v6 == "" {
			t.Fatalf("node %s lists no IPv6 address (%v): the cluster is single-stack, and this test needs both families; "+
				"run it on the project's cluster as `make e2e` builds it (dual-stack unless IP_FAMILIES=ipv4 is set)",
				nodes[i].Name, nodes[i].Status.Addresses)
		}
	}
	const class = "e2e-nodeport-dual"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack),
	}))
	ns := namespace(t, ctx, "e2e-dual")
	if err := k8s.client.Create(ctx, spreadStatefulSet(ns, "dual", classAnnotation(class), int32(len(nodes)))); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "dual", len(nodes), podTimeout)
	for name, p := range pods {
		v4, v6 := nodeIPs(nodeByName(t, nodes, p.Spec.NodeName))
		files := tree(t, ctx, ns, name)
		addr, port := defaultAddress(t, files)
		if addr != v4 {
			t.Errorf("%s on %s reads default-address %s, want its node's IPv4 address %s (IPv4 first)", name, p.Spec.NodeName, addr, v4)
		}
		for _, ip := range []string{v4, v6} {
			if got := files["addresses/"+ip+"/address"]; got != ip {
				t.Errorf("%s on %s: addresses/%s/address reads %q, want its node's address %s; the tree: %v", name, p.Spec.NodeName, ip, got, ip, files)
			}
			if got := files["addresses/"+ip+"/ports/http"]; got != port {
				t.Errorf("%s: addresses/%s/ports/http reads %q, want the node port %s", name, ip, got, port)
			}
		}
		if l := listener(t, ctx, ns, name); !slices.Equal(l.Status.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
			t.Errorf("the Listener of %s reports ipFamilies %v, want [IPv4 IPv6]", name, l.Status.IPFamilies)
		}
		// The node port answers on each family (kube-proxy's iptables and
		// ip6tables rules), from the host.
		answers(t, ctx, v4, port, name)
		answers(t, ctx, v6, port, name)
	}
}

// nodeIPs are a node's InternalIP addresses of each family ("" when it
// lists none of that family).
func nodeIPs(n *corev1.Node) (v4, v6 string) {
	for _, a := range n.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if a.Type != corev1.NodeInternalIP || err != nil {
			continue
		}
		if ip.Is4() && v4 == "" {
			v4 = a.Address
		} else if ip.Is6() && v6 == "" {
			v6 = a.Address
		}
	}
	return v4, v6
}
