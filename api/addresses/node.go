package addresses

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// NodeAddress is what a node can be reached on: its first ExternalIP (else
// first InternalIP) of any family, the same of each IP family, and its
// first Hostname. Any may be empty.
type NodeAddress struct {
	IP         string
	IPv4, IPv6 string
	Hostname   string
}

// ForNode reads a node's reachable addresses from its status.
func ForNode(node *corev1.Node) NodeAddress {
	var na NodeAddress
	var internal NodeAddress
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeExternalIP:
			na.note(a.Address)
		case corev1.NodeInternalIP:
			internal.note(a.Address)
		case corev1.NodeHostName:
			if na.Hostname == "" {
				na.Hostname = a.Address
			}
		}
	}
	na.IP = cmp.Or(na.IP, internal.IP)
	na.IPv4 = cmp.Or(na.IPv4, internal.IPv4)
	na.IPv6 = cmp.Or(na.IPv6, internal.IPv6)
	return na
}

// note records addr as the first address seen, and of its family.
func (na *NodeAddress) note(addr string) {
	if na.IP == "" {
		na.IP = addr
	}
	switch familyOf(addr) {
	case corev1.IPv4Protocol:
		na.IPv4 = cmp.Or(na.IPv4, addr)
	case corev1.IPv6Protocol:
		na.IPv6 = cmp.Or(na.IPv6, addr)
	}
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

// Sort orders addresses deterministically (by address, then type) and drops
// exact duplicates of an address, so that a status computed from unordered
// sources (node lists, endpoint slices) does not flap between reconciles.
func Sort(ings []v1alpha1.ListenerIngress) []v1alpha1.ListenerIngress {
	return SortByFamily(ings, nil)
}

// SortByFamily is Sort with the IP addresses of each family in families
// grouped in that order (hostnames and other families first), so that a
// dual-stack Listener's first address is of its preferred family.
func SortByFamily(ings []v1alpha1.ListenerIngress, families []corev1.IPFamily) []v1alpha1.ListenerIngress {
	rank := func(a v1alpha1.ListenerIngress) int {
		if a.AddressType != v1alpha1.AddressTypeIP {
			return 0
		}
		return max(0, slices.Index(families, familyOf(a.Address)))
	}
	slices.SortFunc(ings, func(a, b v1alpha1.ListenerIngress) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Address, b.Address), cmp.Compare(a.AddressType, b.AddressType))
	})
	return slices.CompactFunc(ings, func(a, b v1alpha1.ListenerIngress) bool {
		return a.Address == b.Address && a.AddressType == b.AddressType
	})
}
