package robustness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// RoutesFollowTheirClass: every route the operator made is what its
// Listener's class allows: the class routes through Gateways at all; the
// route's parents are among the class's; its one hostname is the one the
// class's template gives the Listener; its backend is the Listener's
// Service on one of the Listener's ports; its labels are the operator's
// alone, and it has no annotation.
func RoutesFollowTheirClass(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Routes {
		for i := range s.Routes[t] {
			r := &s.Routes[t][i]
			l, class, where, breach := s.routeJudged(t, "TLSRoute", &r.ObjectMeta)
			if breach != "" {
				out = append(out, breach)
			}
			if class == nil {
				continue
			}
			for _, p := range r.Spec.ParentRefs {
				if !slices.ContainsFunc(class.Spec.Gateway.ParentRefs, func(c v1alpha1.GatewayParentRef) bool {
					return p.Namespace != nil && string(*p.Namespace) == c.Namespace && string(p.Name) == c.Name && p.SectionName != nil && string(*p.SectionName) == c.SectionName
				}) {
					out = append(out, fmt.Sprintf("%s has parent %s/%s, which the class does not name", where, ptrString(p.Namespace), p.Name))
				}
			}
			if want := hostname(class, l); len(r.Spec.Hostnames) != 1 || string(r.Spec.Hostnames[0]) != want {
				out = append(out, fmt.Sprintf("%s routes hostnames %v, the class gives the Listener %s", where, r.Spec.Hostnames, want))
			}
			var backends [][]gwv1.BackendRef
			for _, rule := range r.Spec.Rules {
				backends = append(backends, rule.BackendRefs)
			}
			out = append(out, routeBackend(where, backends, l)...)
			out = append(out, routeMetadata(where, r.Labels, r.Annotations, l)...)
		}
	}
	return out
}

// routeMetadata: a route of Listener l carries the operator's labels
// alone and no annotation (nothing of the tenant's).
func routeMetadata(where string, labels, annotations map[string]string, l *v1alpha1.Listener) []string {
	var out []string
	want := map[string]string{gateway.LabelManagedBy: gateway.LabelManagedByValue, v1alpha1.LabelRouteListener: names.ListenerLabelValue(l.Name)}
	if !maps.Equal(labels, want) {
		out = append(out, fmt.Sprintf("%s has labels %v, want the operator's own %v", where, labels, want))
	}
	if len(annotations) > 0 {
		out = append(out, fmt.Sprintf("%s has annotations %v, want none", where, annotations))
	}
	return out
}

// routeJudged is the Listener of tenant t that controls a route of kind
// (TLSRoute or TCPRoute) with metadata m, its class, and where that names
// them; class nil when there is nothing more to judge: the route is the
// garbage collector's, the class is gone (the Listener says
// ClassNotFound), or breach says that the route stays though the
// Listener names no class or its class makes no routes of that kind.
func (s *Snapshot) routeJudged(t int, kind string, m *metav1.ObjectMeta) (l *v1alpha1.Listener, class *v1alpha1.ListenerClass, where, breach string) {
	l = s.controller(t, m.OwnerReferences)
	if l == nil || l.DeletionTimestamp != nil || m.DeletionTimestamp != nil {
		return nil, nil, "", ""
	}
	if l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		return nil, nil, "", fmt.Sprintf("%s %s/%s of Listener %s stays, and the Listener names no class", kind, m.Namespace, m.Name, l.Name)
	}
	if class = s.classJudging(l); class == nil {
		return nil, nil, "", ""
	}
	where = fmt.Sprintf("%s %s/%s of Listener %s (class %s)", kind, m.Namespace, m.Name, l.Name, class.Name)
	switch {
	case class.Spec.Gateway == nil:
		return nil, nil, "", where + " stays, and the class routes through no Gateway"
	case string(class.Spec.Gateway.EffectiveRouteKind()) != kind:
		return nil, nil, "", fmt.Sprintf("%s stays, and the class makes %ss", where, class.Spec.Gateway.EffectiveRouteKind())
	}
	return l, class, where, ""
}

// routeBackend: a route whose rules have backends sends to Listener l's
// Service, on a port l has, through one rule with one backend.
func routeBackend(where string, backends [][]gwv1.BackendRef, l *v1alpha1.Listener) []string {
	if len(backends) != 1 || len(backends[0]) != 1 {
		return []string{fmt.Sprintf("%s has %d rules, want one with one backend", where, len(backends))}
	}
	b := backends[0][0]
	if string(b.Name) != names.ServiceName(l.Name) || b.Port == nil ||
		!slices.ContainsFunc(l.Spec.Ports, func(p v1alpha1.ListenerPort) bool { return p.Port == int32(*b.Port) }) {
		return []string{fmt.Sprintf("%s sends to %s port %v, not to the Listener's Service %s on one of its ports", where, b.Name, ptrString(b.Port), names.ServiceName(l.Name))}
	}
	return nil
}

// RoutesPublishedOnce: no two Listeners route one hostname through one
// Gateway section.
func RoutesPublishedOnce(st Step) []string {
	var out []string
	s := st.Cur
	seen := map[string]string{}
	for t := range s.Routes {
		for i := range s.Routes[t] {
			r := &s.Routes[t][i]
			l := s.routeOwner(t, r)
			if l == nil || r.DeletionTimestamp != nil {
				continue
			}
			who := l.Namespace + "/" + l.Name
			for _, p := range r.Spec.ParentRefs {
				for _, h := range r.Spec.Hostnames {
					key := fmt.Sprintf("%s through section %s of Gateway %s/%s", h, ptrString(p.SectionName), ptrString(p.Namespace), p.Name)
					if other, ok := seen[key]; ok && other != who {
						out = append(out, fmt.Sprintf("Listeners %s and %s both route %s", other, who, key))
					}
					seen[key] = who
				}
			}
		}
	}
	return out
}

// GatewayRefusalsSaid: a Listener of a gateway class is Ready only when
// each of its ports has its own route (not another Listener's of that
// name), every Gateway its class names exists, and the Gateway's
// controller (Traefik) attached every route to every parent: a route
// Traefik refused, or a Gateway or section that is not there, leaves it
// not Ready (NotReadySaysWhy holds it to a reason).
func GatewayRefusalsSaid(st Step) []string {
	var out []string
	s := st.Cur
	if !s.World.Gateway {
		return nil
	}
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			class := s.classOf(l)
			if l.DeletionTimestamp != nil || class == nil || class.Spec.Gateway == nil || !meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReady) {
				continue
			}
			who := fmt.Sprintf("Listener %s/%s (class %s) is Ready, and", l.Namespace, l.Name, class.Name)
			bindings, errs := gateway.Bindings(class, l)
			if len(errs) > 0 {
				out = append(out, fmt.Sprintf("%s its ports do not bind to the class's sections: %v", who, errs.ToAggregate()))
			}
			for _, b := range bindings {
				out = append(out, s.bindingAttached(t, l, b, who)...)
			}
		}
	}
	return out
}

// bindingAttached: binding b of Listener l (tenant t) has l's route,
// attached to every parent, each of which exists.
func (s *Snapshot) bindingAttached(t int, l *v1alpha1.Listener, b gateway.Binding, who string) []string {
	var route *gwv1.TLSRoute
	for i := range s.Routes[t] {
		if s.Routes[t][i].Name == b.RouteName {
			route = &s.Routes[t][i]
		}
	}
	if route == nil || s.routeOwner(t, route) != l {
		return []string{fmt.Sprintf("%s it has no route %s of its own", who, b.RouteName)}
	}
	var out []string
	for _, p := range b.Parents {
		if p.Namespace != s.World.GatewayNamespace() || s.Gateways[p.Name] == nil {
			out = append(out, fmt.Sprintf("%s Gateway %s/%s does not exist", who, p.Namespace, p.Name))
			continue
		}
		if a := gateway.Attached(route, p); !a.Attached {
			out = append(out, fmt.Sprintf("%s route %s is not attached to section %s of Gateway %s (Traefik says %q %s)", who, route.Name, p.SectionName, p.Name, a.Reason, a.Message))
		}
	}
	return out
}

// routesJudged says whether Traefik has written, for the current
// generation of every route the operator made in the world, a status for
// each parent whose Gateway exists: until then the operator has not seen
// what it judges Ready by (nothing to wait for without Traefik).
func (c *Cluster) routesJudged(ctx context.Context, w World) (bool, error) {
	if !w.Gateway {
		return true, nil
	}
	var gws gwv1.GatewayList
	if err := c.Admin.List(ctx, &gws, client.InNamespace(w.GatewayNamespace())); err != nil {
		return false, err
	}
	for _, ns := range w.Tenants {
		var routes gwv1.TLSRouteList
		if err := c.Admin.List(ctx, &routes, client.InNamespace(ns), client.MatchingLabels{gateway.LabelManagedBy: gateway.LabelManagedByValue}); err != nil {
			return false, err
		}
		for i := range routes.Items {
			r := &routes.Items[i]
			for _, ref := range judgedParents(r.Spec.ParentRefs, gws.Items) {
				if a := gateway.Attached(r, ref); !a.Attached && a.Reason == "" {
					return false, nil
				}
			}
		}
		if judged, err := c.tcpRoutesJudged(ctx, ns, gws.Items); !judged || err != nil {
			return false, err
		}
	}
	return true, nil
}

// judgedParents are a route's parents whose Gateway is among gws: those
// its controller writes a status for.
func judgedParents(refs []gwv1.ParentReference, gws []gwv1.Gateway) []v1alpha1.GatewayParentRef {
	var out []v1alpha1.GatewayParentRef
	for _, p := range refs {
		if slices.ContainsFunc(gws, func(g gwv1.Gateway) bool { return g.Name == string(p.Name) }) {
			out = append(out, v1alpha1.GatewayParentRef{Name: string(p.Name), Namespace: ptrString(p.Namespace), SectionName: ptrString(p.SectionName)})
		}
	}
	return out
}

// awaitGateway waits, at most 15 s, until Traefik has written the status
// of Gateway gw's current generation: the routes' statuses change with it.
func (c *Cluster) awaitGateway(ctx context.Context, gw *gwv1.Gateway) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		have := &gwv1.Gateway{}
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(gw), have); err != nil {
			return client.IgnoreNotFound(err)
		}
		if c := meta.FindStatusCondition(have.Status.Conditions, string(gwv1.GatewayConditionAccepted)); c != nil && c.ObservedGeneration == have.Generation {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// ptrString is *p as a string, "" for nil.
func ptrString[T ~string | ~int32](p *T) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

// addRoutes counts the operator's routes and what Traefik said of each
// parent ("TLSRoute parent Accepted=<reason>").
func (c *Coverage) addRoutes(st Step) {
	c.addTCPRoutes(st) // tcp.go
	for t := range st.Cur.Routes {
		for _, r := range st.Cur.Routes[t] {
			c.States["TLSRoute"]++
			for _, ps := range r.Status.Parents {
				if a := meta.FindStatusCondition(ps.Conditions, string(gwv1.RouteConditionAccepted)); a != nil {
					c.States["TLSRoute parent Accepted="+a.Reason]++
				}
			}
		}
	}
}
