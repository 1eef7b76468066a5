package gateway

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TCPBinding is one Listener port routed through one section of a
// TCPRoute class's block: entry Index of its spec.gateway.parentRefs.
type TCPBinding struct {
	Port      v1alpha1.ListenerPort
	Index     int
	Parent    v1alpha1.GatewayParentRef
	RouteName string
}

// SectionsExhausted says that a TCPRoute class has too few sections for a
// Listener's block.
type SectionsExhausted struct {
	Class    string
	Sections int
	// Replica is the Listener's StatefulSet ordinal (-1: none), Wanted its
	// number of ports.
	Replica, Wanted int
}

func (e *SectionsExhausted) Error() string {
	need := fmt.Sprintf("no block of %d free section(s) is left for this Listener", e.Wanted)
	if e.Replica >= 0 {
		need = fmt.Sprintf("this Listener, replica %d with %d port(s), takes entries %d to %d", e.Replica, e.Wanted, e.Replica*e.Wanted, (e.Replica+1)*e.Wanted-1)
	}
	return fmt.Sprintf("ListenerClass %s has %d section(s) (spec.gateway.parentRefs, counted from 0) and %s; ask an administrator to add sections: a Gateway listener of protocol TCP admitting TCPRoutes for each, and its parentRef at the end of the class's spec.gateway.parentRefs",
		e.Class, e.Sections, need)
}

// SectionTaken says that a section of a Listener's block is held by a
// route that is not the Listener's own. It names the class's Gateway and
// section (the administrator's), never the route or its namespace.
type SectionTaken struct {
	Class   string
	Port    string
	Index   int
	Section v1alpha1.GatewayParentRef
}

func (e *SectionTaken) Error() string {
	return fmt.Sprintf("section %q of Gateway %s/%s (entry %d of ListenerClass %s's spec.gateway.parentRefs), which port %q of this Listener is routed through, is held by another TCPRoute; the operator does not take it over, so the port has no route: ask an administrator to remove the other route from that section, or to move this workload to sections of its own",
		e.Section.SectionName, e.Section.Namespace, e.Section.Name, e.Index, e.Class, e.Port)
}

// TCPSections assigns each port of Listener l a section of its TCPRoute
// class's block (the class's parentRefs, in order). n is l's number of
// ports, j a port's place in spec.ports:
//
//   - replica i ≥ 0 (nodeports.Replica) takes entry i×n+j, whoever holds it;
//   - any other Listener keeps the entries its routes hold (own: port name
//     → entry) while no other route holds one, else takes the first block
//     of n entries, aligned at k×n, that held leaves free (lowest first).
//
// held are the entries routes that are not l's own hold. The error is a
// *SectionsExhausted when an entry lies past the list or no block is
// free, a *SectionTaken (the first) when a replica's entry is held; the
// bindings are returned either way for the entries that can be routed.
func TCPSections(class *v1alpha1.ListenerClass, l *v1alpha1.Listener, replica int, own map[string]int, held map[int]bool) ([]TCPBinding, error) {
	g := class.Spec.Gateway
	n, size := len(l.Spec.Ports), len(g.ParentRefs)
	if n == 0 {
		return nil, nil
	}
	exhausted := &SectionsExhausted{Class: class.Name, Sections: size, Replica: replica, Wanted: n}
	var idx []int
	switch {
	case replica >= 0:
		if (replica+1)*n > size {
			return nil, exhausted
		}
		for j := range n {
			idx = append(idx, replica*n+j)
		}
	case keepsOwn(l, own, held, size):
		for _, p := range l.Spec.Ports {
			idx = append(idx, own[p.Name])
		}
	default:
		b := slices.IndexFunc(seq(0, size/n), func(b int) bool {
			return !slices.ContainsFunc(seq(b*n, n), func(i int) bool { return held[i] })
		})
		if b < 0 {
			return nil, exhausted
		}
		idx = seq(b*n, n)
	}
	var out []TCPBinding
	var taken error
	for j, p := range l.Spec.Ports {
		i := idx[j]
		if held[i] {
			if taken == nil {
				taken = &SectionTaken{Class: class.Name, Port: p.Name, Index: i, Section: g.ParentRefs[i]}
			}
			continue
		}
		out = append(out, TCPBinding{Port: p, Index: i, Parent: g.ParentRefs[i], RouteName: names.RouteName(l.Name, p.Name)})
	}
	return out, taken
}

// keepsOwn reports whether every port of l has an entry of its own that
// no other route holds.
func keepsOwn(l *v1alpha1.Listener, own map[string]int, held map[int]bool, size int) bool {
	for _, p := range l.Spec.Ports {
		i, ok := own[p.Name]
		if !ok || i >= size || held[i] {
			return false
		}
	}
	return true
}

func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// CheckTCPSection finds the listener p.SectionName of Gateway gw and says
// what keeps it from carrying a TCPRoute class's routes: it must exist,
// have protocol TCP and admit TCPRoutes. problem names the Gateway, the
// section and the fix.
func CheckTCPSection(gw *gwv1.Gateway, p v1alpha1.GatewayParentRef) (s Section, problem string) {
	l, where, problem := findSection(gw, p, " (protocol: TCP)")
	if problem != "" {
		return s, problem
	}
	s = Section{Port: int32(l.Port)}
	fix := fmt.Sprintf("give listener %q of %s protocol: TCP and allowedRoutes.kinds that include TCPRoute, or name another listener in the class's spec.gateway.parentRefs", p.SectionName, where)
	switch {
	case l.Protocol != gwv1.TCPProtocolType:
		return s, fmt.Sprintf("listener %q of %s has protocol %s, and a TCPRoute class's routes attach only to protocol TCP; %s", p.SectionName, where, l.Protocol, fix)
	case !admitsKind(l.AllowedRoutes, "TCPRoute"):
		return s, fmt.Sprintf("listener %q of %s does not admit TCPRoutes (allowedRoutes.kinds); %s", p.SectionName, where, fix)
	}
	return s, ""
}

// admitsKind reports whether a listener's allowedRoutes admit routes of
// kind (a listener's default kinds are its protocol's own).
func admitsKind(ar *gwv1.AllowedRoutes, kind string) bool {
	if ar == nil || len(ar.Kinds) == 0 {
		return true
	}
	return slices.ContainsFunc(ar.Kinds, func(k gwv1.RouteGroupKind) bool {
		return string(k.Kind) == kind && (k.Group == nil || *k.Group == Group)
	})
}

// GatewayAddress is the address a TCPRoute class's Listeners publish for a
// section of Gateway gw: the first IP or hostname of its status.addresses
// (what its controller says it is reached at); ok false when it has none.
func GatewayAddress(gw *gwv1.Gateway) (address string, typ v1alpha1.AddressType, ok bool) {
	for _, a := range gw.Status.Addresses {
		switch {
		case a.Type == nil || *a.Type == gwv1.IPAddressType:
			return a.Value, v1alpha1.AddressTypeIP, true
		case *a.Type == gwv1.HostnameAddressType:
			return a.Value, v1alpha1.AddressTypeHostname, true
		}
	}
	return "", "", false
}

// The versions of TCPRoute the operator can write. At Gateway API v1.6.1
// the Standard CRD serves v1 only, the Experimental one v1 and v1alpha2
// (one object under both, no conversion); older Experimental CRDs serve
// v1alpha2 only.
const (
	TCPRouteV1       = "v1"
	TCPRouteV1alpha2 = "v1alpha2"
)

// TCPRouteVersion is the version of TCPRoute the operator writes: v1 where
// the API server serves it, else v1alpha2; "" when it serves neither.
// mapper is a discovering RESTMapper.
func TCPRouteVersion(mapper meta.RESTMapper) string {
	for _, v := range []string{TCPRouteV1, TCPRouteV1alpha2} {
		if _, err := mapper.RESTMapping(schema.GroupKind{Group: Group, Kind: "TCPRoute"}, v); err == nil {
			return v
		}
	}
	return ""
}

// SectionKey names section p of a Gateway, to index routes by; with
// SectionName "" it names every section of the Gateway (a parentRef
// without one attaches to them all).
func SectionKey(p v1alpha1.GatewayParentRef) string {
	return p.Namespace + "/" + p.Name + "/" + p.SectionName
}

// RouteSections are the SectionKeys of the Gateway sections a route in
// namespace routeNamespace names: its parentRefs of kind Gateway, with the
// API's defaults (a parentRef without a section names the whole Gateway).
func RouteSections(routeNamespace string, refs []gwv1.ParentReference) []string {
	var out []string
	for _, r := range refs {
		if r.Group != nil && string(*r.Group) != Group || r.Kind != nil && *r.Kind != "Gateway" {
			continue
		}
		p := v1alpha1.GatewayParentRef{Namespace: routeNamespace, Name: string(r.Name)}
		if r.Namespace != nil {
			p.Namespace = string(*r.Namespace)
		}
		if r.SectionName != nil {
			p.SectionName = string(*r.SectionName)
		}
		out = append(out, SectionKey(p))
	}
	return out
}
