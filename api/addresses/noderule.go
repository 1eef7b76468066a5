package addresses

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// NodeRule is how a NodePort Listener turns a node into the addresses it
// publishes for it: the one rule behind its status, its pods' PodListeners
// and their address trees (ForPod).
type NodeRule struct {
	// Pref is the class's address preference (EffectiveAddressType).
	Pref v1alpha1.AddressType
	// Source is where the node's address is read from.
	Source v1alpha1.NodeAddressSource
	// Families are the IP families to publish an address of, in order;
	// empty publishes one address of any family (the node's first), as
	// the Stackable operator does.
	Families []corev1.IPFamily
}

// NodeRuleOf is the rule of a class whose Listener's Service has the IP
// families serviceFamilies (status.ipFamilies; empty while unknown). Only a
// class that decides its Services' families publishes one address per
// family: any other keeps the one address it always published.
func NodeRuleOf(spec *v1alpha1.ListenerClassSpec, serviceFamilies []corev1.IPFamily) NodeRule {
	r := NodeRule{Pref: spec.EffectiveAddressType(), Source: spec.EffectiveNodeAddress()}
	if spec.HasFamilies() && len(serviceFamilies) > 0 {
		r.Families = spec.OrderFamilies(serviceFamilies)
	}
	return r
}

// Ingress is what the rule publishes for node, with the given node ports:
// nothing for a node with no usable address. problems are the entries of
// the node's address annotation that were skipped (an event's message).
func (r NodeRule) Ingress(node *corev1.Node, nodePorts map[string]int32) (ings []v1alpha1.ListenerIngress, problems []string) {
	na := ForNode(node)
	if r.Source == v1alpha1.NodeAddressAnnotation {
		if value, ok := node.Annotations[v1alpha1.AnnotationNodeAddress]; ok {
			fromAnn, bad := ParseNodeAddress(value)
			for _, b := range bad {
				problems = append(problems, fmt.Sprintf("node %s: %s", node.Name, b))
			}
			if fromAnn != (NodeAddress{}) {
				na = fromAnn
			}
		}
	}
	if len(r.Families) > 0 && !(r.Pref == v1alpha1.AddressTypeHostname && na.Hostname != "") {
		for _, f := range r.Families {
			if ip := na.family(f); ip != "" {
				ings = append(ings, v1alpha1.ListenerIngress{Address: ip, AddressType: v1alpha1.AddressTypeIP, Ports: nodePorts})
			}
		}
		if len(ings) > 0 {
			return ings, problems
		}
		// An address of another family would not answer on these node
		// ports: only the node's name (resolving to whatever) is left.
		na.IP = ""
	}
	addr, typ, ok := Pick(r.Pref, na.IP, na.Hostname)
	if !ok {
		return nil, problems
	}
	return []v1alpha1.ListenerIngress{{Address: addr, AddressType: typ, Ports: nodePorts}}, problems
}

// ParseNodeAddress reads a node's address annotation: comma-separated, at
// most one IPv4 address, one IPv6 address and one DNS name. bad says, for
// each entry skipped, what is wrong with it.
func ParseNodeAddress(value string) (na NodeAddress, bad []string) {
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if problem := na.add(entry); problem != "" {
			bad = append(bad, fmt.Sprintf("%s %q: %s; it is skipped (write at most one IPv4 address, one IPv6 address and one DNS name, comma-separated)",
				v1alpha1.AnnotationNodeAddress, entry, problem))
		}
	}
	return na, bad
}

// add records one entry of the annotation, or says why it cannot.
func (na *NodeAddress) add(entry string) string {
	ip, err := netip.ParseAddr(entry)
	switch {
	case err != nil:
		if errs := validation.IsDNS1123Subdomain(entry); len(errs) > 0 {
			return "neither an IP address nor a DNS name"
		}
		if na.Hostname != "" {
			return "a second DNS name"
		}
		na.Hostname = entry
	case ip.Zone() != "" || ip.Is4In6() || ip.IsUnspecified():
		return "not an address a client can reach (a zone, an IPv4-mapped or an unspecified address)"
	case ip.Is4() && na.IPv4 == "":
		na.IPv4 = entry
	case ip.Is6() && na.IPv6 == "":
		na.IPv6 = ip.String()
	default:
		return "a second address of the same IP family"
	}
	if na.IP == "" {
		na.IP = cmp.Or(na.IPv4, na.IPv6)
	}
	return ""
}

// family is the node's address of IP family f, "" when it has none.
func (na NodeAddress) family(f corev1.IPFamily) string {
	if f == corev1.IPv6Protocol {
		return na.IPv6
	}
	return na.IPv4
}

// familyOf is the IP family of an IP address, "" for anything else.
func familyOf(addr string) corev1.IPFamily {
	ip, err := netip.ParseAddr(addr)
	switch {
	case err != nil:
		return ""
	case ip.Is4():
		return corev1.IPv4Protocol
	default:
		return corev1.IPv6Protocol
	}
}
