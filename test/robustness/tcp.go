package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TCPRoute classes (spec.gateway.routeKind TCPRoute) against Traefik, in
// `make robustness` only: Traefik has tcpSections TCP entry points
// (gatewaytraefik.go); section t<i> of a Gateway listens on the i-th.
// Gateway slot g has sections t<g×tcpPerGateway>… only, so that no two
// Gateways of a world listen on one port: Traefik gives every Gateway the
// address 127.0.0.1, and two Gateways on one port would be one published
// address of the administrator's making, not the operator's.
const (
	tcpSections   = 4
	tcpPerGateway = tcpSections / gatewaySlots
)

// tcpSectionIndex is i for a TCP section name "t<i>".
func tcpSectionIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "t")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && i < tcpSections
}

// tcpSection is TCP section name on port, admitting TCPRoutes (GatewayFor
// sets from which namespaces).
func tcpSection(name string, port int) gwv1.Listener {
	return gwv1.Listener{
		Name: gwv1.SectionName(name), Port: gwv1.PortNumber(port), Protocol: gwv1.TCPProtocolType,
		AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TCPRoute"}}},
	}
}

// genTCPSections are the TCP sections of a PutGateway of slot g: each of
// the slot's most of the time, admitting All mostly, else tenant a only
// (Selector) or neither tenant (Same: the Gateways' own namespace).
func genTCPSections(r *rand.Rand, g int) []string {
	var out []string
	for i := g * tcpPerGateway; i < (g+1)*tcpPerGateway; i++ {
		if r.IntN(4) > 0 {
			out = append(out, fmt.Sprintf("t%d:%s", i, pick(r, []string{"All", "All", "All", "Selector", "Same"})))
		}
	}
	return out
}

// genTCPClass is a TCPRoute class in a slot (whatever the slot held):
// ClusterIP, no hostname (a TCPRoute class publishes the Gateway's
// address), its parents an ordered block of one to tcpSections TCP
// sections that are there, so that a StatefulSet of up to 3 replicas of 1
// or 2 ports now fits and now exhausts it; now and then shuffled (a
// replica's entry on the other Gateway) or with a section that is no TCP
// section (TLS, of a Gateway that never exists, or of a Gateway that does
// not have it).
func genTCPClass(r *rand.Rand, m *model) Op {
	op := genPutClass(r, r.IntN(classSlots))
	op.Type, op.Range, op.NodeAnnotation, op.Template, op.TCP = v1alpha1.ServiceTypeClusterIP, false, false, 0, true
	var there []string
	for g, sections := range m.gateways {
		for _, s := range sections {
			if name, _, _ := strings.Cut(s, ":"); strings.HasPrefix(name, "t") {
				there = append(there, fmt.Sprintf("g%d/%s", g, name))
			}
		}
	}
	slices.Sort(there) // map order is random; a seed's history is not
	if len(there) == 0 {
		there = []string{"g0/t0", "g0/t1", "g1/t2", "g1/t3"}
	}
	if r.IntN(4) == 0 {
		r.Shuffle(len(there), func(i, j int) { there[i], there[j] = there[j], there[i] })
	}
	op.Parents = there[:min(len(there), 1+r.IntN(tcpSections))]
	if r.IntN(6) == 0 {
		odd := pick(r, []string{"g0/p0", fmt.Sprintf("g%d/t0", gatewaySlots), "g0/t3"})
		if !slices.Contains(op.Parents, odd) {
			op.Parents = append(slices.Clone(op.Parents), odd)
		}
	}
	return op
}

// takeTCPRoutes records the operator's TCPRoutes in the tenants'
// namespaces (read as v1: the Experimental CRD serves one object under v1
// and v1alpha2).
func (s *Snapshot) takeTCPRoutes(ctx context.Context, c client.Reader) error {
	for t, ns := range s.World.Tenants {
		var routes gwv1.TCPRouteList
		if err := c.List(ctx, &routes, client.InNamespace(ns), client.MatchingLabels{gateway.LabelManagedBy: gateway.LabelManagedByValue}); err != nil {
			return fmt.Errorf("list TCPRoutes in %s: %w", ns, err)
		}
		s.TCPRoutes[t] = routes.Items
	}
	return nil
}

// tcpRoutesJudged says whether Traefik has written, for the current
// generation of every TCPRoute the operator made in namespace ns, a
// status for each parent whose Gateway is among gws.
func (c *Cluster) tcpRoutesJudged(ctx context.Context, ns string, gws []gwv1.Gateway) (bool, error) {
	var routes gwv1.TCPRouteList
	if err := c.Admin.List(ctx, &routes, client.InNamespace(ns), client.MatchingLabels{gateway.LabelManagedBy: gateway.LabelManagedByValue}); err != nil {
		return false, err
	}
	for i := range routes.Items {
		r := &routes.Items[i]
		for _, ref := range judgedParents(r.Spec.ParentRefs, gws) {
			if a := gateway.TCPAttached(r, ref); !a.Attached && a.Reason == "" {
				return false, nil
			}
		}
	}
	return true, nil
}

// addTCPRoutes counts the operator's TCPRoutes, what Traefik said of each
// parent, and the reasons TCPRoute classes' Listeners are not Ready for.
func (c *Coverage) addTCPRoutes(st Step) {
	for t := range st.Cur.TCPRoutes {
		for _, r := range st.Cur.TCPRoutes[t] {
			c.States["TCPRoute"]++
			for _, ps := range r.Status.Parents {
				for _, cond := range ps.Conditions {
					if cond.Type == string(gwv1.RouteConditionAccepted) {
						c.States["TCPRoute parent Accepted="+cond.Reason]++
					}
				}
			}
		}
		for i := range st.Cur.Listeners[t] {
			l := &st.Cur.Listeners[t][i]
			if !tcpClass(st.Cur.classOf(l)) {
				continue
			}
			what := "TCPRoute class Listener"
			if claims.Replica(l, st.Cur.mounting(t, l)) >= 0 {
				what = "TCPRoute class replica"
			}
			c.States[what+" Ready="+readyReason(l)]++
		}
	}
}
