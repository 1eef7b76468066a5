package addresses

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// NodeAddress is what a node can be reached on: its first ExternalIP (else
// first InternalIP) and its first Hostname. Either may be empty.
type NodeAddress struct {
	IP       string
	Hostname string
}

// ForNode reads a node's reachable addresses from its status.
func ForNode(node *corev1.Node) NodeAddress {
	var na NodeAddress
	var internalIP string
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeExternalIP:
			if na.IP == "" {
				na.IP = a.Address
			}
		case corev1.NodeInternalIP:
			if internalIP == "" {
				internalIP = a.Address
			}
		case corev1.NodeHostName:
			if na.Hostname == "" {
				na.Hostname = a.Address
			}
		}
	}
	if na.IP == "" {
		na.IP = internalIP
	}
	return na
}

// Pick returns the address of the preferred type, falling back to the other
// one when the preferred one is unknown. ok is false when neither is known.
func Pick(pref v1alpha1.AddressType, ip, hostname string) (address string, typ v1alpha1.AddressType, ok bool) {
	first, firstType, second, secondType := hostname, v1alpha1.AddressTypeHostname, ip, v1alpha1.AddressTypeIP
	if pref == v1alpha1.AddressTypeIP {
		first, firstType, second, secondType = ip, v1alpha1.AddressTypeIP, hostname, v1alpha1.AddressTypeHostname
	}
	switch {
	case first != "":
		return first, firstType, true
	case second != "":
		return second, secondType, true
	}
	return "", "", false
}

// NodeIngress is the address a NodePort Listener publishes for one node, with
// the given node ports. ok is false for a node with no usable address.
func NodeIngress(node *corev1.Node, pref v1alpha1.AddressType, nodePorts map[string]int32) (v1alpha1.ListenerIngress, bool) {
	na := ForNode(node)
	addr, typ, ok := Pick(pref, na.IP, na.Hostname)
	if !ok {
		return v1alpha1.ListenerIngress{}, false
	}
	return v1alpha1.ListenerIngress{Address: addr, AddressType: typ, Ports: nodePorts}, true
}

// Sort orders addresses deterministically (by address, then type) and drops
// exact duplicates of an address, so that a status computed from unordered
// sources (node lists, endpoint slices) does not flap between reconciles.
func Sort(ings []v1alpha1.ListenerIngress) []v1alpha1.ListenerIngress {
	slices.SortFunc(ings, func(a, b v1alpha1.ListenerIngress) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.AddressType, b.AddressType))
	})
	return slices.CompactFunc(ings, func(a, b v1alpha1.ListenerIngress) bool {
		return a.Address == b.Address && a.AddressType == b.AddressType
	})
}
