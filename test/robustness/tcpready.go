package robustness

import (
	"fmt"
	"maps"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TCPRefusalsSaid: a Listener of a TCPRoute class is Ready only when each
// of its ports has its own TCPRoute, on a Gateway that exists and
// attached (Accepted and ResolvedRefs for the route's generation); one
// that says GatewaySectionTaken has a section of its class held by a
// route that is not its own and that the Gateway did not refuse there
// (never a section nobody holds). NotReadySaysWhy holds every other
// reason to a message, NoOtherTenantNamed the message to its namespace.
func TCPRefusalsSaid(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			class := s.classOf(l)
			if !tcpClass(class) || l.DeletionTimestamp != nil {
				continue
			}
			who := fmt.Sprintf("Listener %s/%s (class %s)", l.Namespace, l.Name, class.Name)
			if says(l, v1alpha1.ReasonGatewaySectionTaken) && !s.sectionHeld(class, l) {
				out = append(out, who+" says GatewaySectionTaken, and no other route holds a section of its class")
			}
			if !readyNow(l) {
				continue
			}
			for _, p := range l.Spec.Ports {
				r := s.ownTCPRoute(t, l, p.Name)
				if r == nil {
					out = append(out, fmt.Sprintf("%s is Ready, and port %s has no TCPRoute of its own", who, p.Name))
					continue
				}
				for _, ref := range r.Spec.ParentRefs {
					pr := parentRef(ref)
					if pr.Namespace != s.World.GatewayNamespace() || s.Gateways[pr.Name] == nil {
						out = append(out, fmt.Sprintf("%s is Ready, and Gateway %s/%s of route %s does not exist", who, pr.Namespace, pr.Name, r.Name))
					} else if a := gateway.TCPAttached(r, pr); !a.Attached {
						out = append(out, fmt.Sprintf("%s is Ready, and route %s is not attached to section %s of Gateway %s (Traefik says %q %s)", who, r.Name, pr.SectionName, pr.Name, a.Reason, a.Message))
					}
				}
			}
		}
	}
	return out
}

// sectionHeld says whether a section of class is held against Listener
// l: named by a TCPRoute of the world that l does not control and that the
// Gateway did not refuse on it.
func (s *Snapshot) sectionHeld(class *v1alpha1.ListenerClass, l *v1alpha1.Listener) bool {
	for t := range s.TCPRoutes {
		for i := range s.TCPRoutes[t] {
			r := &s.TCPRoutes[t][i]
			if s.controller(t, r.OwnerReferences) == l {
				continue
			}
			for _, ref := range r.Spec.ParentRefs {
				pr := parentRef(ref)
				for _, c := range class.Spec.Gateway.ParentRefs {
					if c == pr && !gateway.TCPRefused(r, pr) {
						return true
					}
				}
			}
		}
	}
	return false
}

// TCPListenersToldGatewayAddress: a Listener of a TCPRoute class, Ready
// for its spec, publishes for each port the address of the Gateway of its
// route's section (the Gateway's status.addresses[0]) with the section's
// port, and nothing else; PodsToldTheirAddresses holds each pod's tree
// and PodListeners to what the Listener publishes.
func TCPListenersToldGatewayAddress(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			if !tcpClass(s.classOf(l)) || !readyNow(l) {
				continue
			}
			want := map[string]map[string]int32{}
			for _, p := range l.Spec.Ports {
				r := s.ownTCPRoute(t, l, p.Name)
				if r == nil || len(r.Spec.ParentRefs) != 1 {
					continue // TCPRefusalsSaid's
				}
				pr := parentRef(r.Spec.ParentRefs[0])
				gw := s.Gateways[pr.Name]
				if gw == nil {
					continue
				}
				addr, _, ok := gateway.GatewayAddress(gw)
				port := sectionPortOf(gw, pr.SectionName)
				if !ok || port == 0 {
					out = append(out, fmt.Sprintf("Listener %s/%s is Ready, and Gateway %s has no address or no section %s", l.Namespace, l.Name, gw.Name, pr.SectionName))
					continue
				}
				if want[addr] == nil {
					want[addr] = map[string]int32{}
				}
				want[addr][p.Name] = port
			}
			have := map[string]map[string]int32{}
			for _, a := range l.Status.IngressAddresses {
				have[a.Address] = a.Ports
			}
			if !maps.EqualFunc(have, want, func(a, b map[string]int32) bool { return maps.Equal(a, b) }) {
				out = append(out, fmt.Sprintf("Listener %s/%s is Ready and publishes %v, want the Gateway's address and each section's port %v", l.Namespace, l.Name, have, want))
			}
		}
	}
	return out
}

// sectionPortOf is the port of section name of gw, 0 when it has none.
func sectionPortOf(gw *gwv1.Gateway, name string) int32 {
	for _, ls := range gw.Spec.Listeners {
		if string(ls.Name) == name {
			return int32(ls.Port)
		}
	}
	return 0
}
