package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Gateway classes (spec.gateway) against Traefik (gatewaytraefik.go), in
// `make robustness` only (-robustness.gateway): the administrator puts
// and deletes Gateways with sections of every kind and classes whose
// parents name them; tenants use those classes like any other.
const (
	PutGateway    Kind = "PutGateway"    // the administrator creates or replaces Gateway Gateway with Sections
	DeleteGateway Kind = "DeleteGateway" // the administrator deletes Gateway Gateway
)

// gatewaySlots is how many Gateways a world may have; parents also name
// slot gatewaySlots, which never exists.
const gatewaySlots = 2

// gatewayAccessLabel on tenant a's namespace is what a section of
// "Selector" admits routes from; tenant b's routes it does not.
const gatewayAccessLabel = "robust.test/gateway-access"

// GatewayNamespace is the namespace of the world's Gateways.
func (w World) GatewayNamespace() string { return w.Prefix + "-gateways" }

// GatewayName is the name of Gateway slot i.
func (w World) GatewayName(i int) string { return fmt.Sprintf("g%d", i) }

// sectionPort is which of Traefik's TLS entry points a section of this
// name listens on: one per Listener port name, so that a Listener's ports
// go through sections of their own names.
func sectionPort(name string) int {
	if name == "p1" {
		return 1
	}
	return 0
}

// GatewayFor is the Gateway a PutGateway makes, its sections on the ports
// of env's entry points. A section is "<name>:<kind>". Sections p0 and p1
// are TLS: All, Selector and Same admit TLSRoutes from those namespaces,
// Elsewhere has a hostname outside the world's domain, Terminate is not
// Passthrough. Sections t0… are TCP (tcp.go): All, Selector and Same
// admit TCPRoutes from those namespaces.
func (w World) GatewayFor(op Op, env GatewayEnv) *gwv1.Gateway {
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: w.GatewayName(op.Gateway), Namespace: w.GatewayNamespace()},
		Spec:       gwv1.GatewaySpec{GatewayClassName: gatewayClassName},
	}
	for _, s := range op.Sections {
		name, kind, _ := strings.Cut(s, ":")
		from := gwv1.NamespacesFromAll
		switch kind {
		case "Selector", "Same":
			from = gwv1.FromNamespaces(kind)
		}
		ls := tlsSection(w, name, kind, env)
		if i, ok := tcpSectionIndex(name); ok {
			ls = tcpSection(name, env.TCPPorts[i])
		}
		ls.AllowedRoutes.Namespaces = &gwv1.RouteNamespaces{From: &from}
		if from == gwv1.NamespacesFromSelector {
			ls.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{gatewayAccessLabel: "allowed"}}
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, ls)
	}
	return gw
}

// tlsSection is TLS section name of kind on its entry point of env.
func tlsSection(w World, name, kind string, env GatewayEnv) gwv1.Listener {
	host := gwv1.Hostname("*." + w.Domain)
	if kind == "Elsewhere" {
		host = "*.elsewhere.test"
	}
	ls := gwv1.Listener{
		Name: gwv1.SectionName(name), Hostname: &host, Port: gwv1.PortNumber(env.Ports[sectionPort(name)]), Protocol: gwv1.TLSProtocolType,
		TLS:           &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)},
		AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TLSRoute"}}},
	}
	if kind == "Terminate" {
		ls.TLS = &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModeTerminate), CertificateRefs: []gwv1.SecretObjectReference{{Name: "robust-missing"}}}
	}
	return ls
}

// gatewayParents are the class's spec.gateway for op.Parents
// ("g<slot>/<section>"), nil for none.
func (w World) gatewayParents(op Op) *v1alpha1.ListenerGateway {
	if len(op.Parents) == 0 {
		return nil
	}
	g := &v1alpha1.ListenerGateway{}
	for _, p := range op.Parents {
		gw, section, _ := strings.Cut(p, "/")
		g.ParentRefs = append(g.ParentRefs, v1alpha1.GatewayParentRef{Name: gw, Namespace: w.GatewayNamespace(), SectionName: section})
	}
	if op.TCP {
		g.RouteKind = v1alpha1.RouteKindTCPRoute
	}
	return g
}

// applyGateway does PutGateway and DeleteGateway as the administrator.
func (c *Cluster) applyGateway(ctx context.Context, w World, op Op) error {
	if c.Gateway == nil {
		return fmt.Errorf("%s needs Traefik (-robustness.gateway)", op.Kind)
	}
	want := w.GatewayFor(op, *c.Gateway)
	if op.Kind == DeleteGateway {
		return c.Admin.Delete(ctx, want)
	}
	if err := put(ctx, c.Admin, want, func(have, want *gwv1.Gateway) { have.Spec = want.Spec }); err != nil {
		return err
	}
	return c.awaitGateway(ctx, want)
}

// gatewayOdds: with Traefik, one operation in gatewayOdds is one of
// genGateway's.
const gatewayOdds = 4

// genGateway is the administrator's Gateway work: a Gateway put (its
// sections of every kind, TLS and TCP) or deleted, or a class routed
// through Gateways: a TLSRoute class (ClusterIP with a hostname template,
// as such a class must be; its parents sometimes a Gateway or section that
// is not there) or a TCPRoute class (genTCPClass). A class of either kind
// replaces whatever the slot held, plain or routed.
func genGateway(r *rand.Rand, m *model) Op {
	switch x := r.IntN(11); {
	case x < 4 || len(m.gateways) == 0:
		op := Op{Kind: PutGateway, Gateway: r.IntN(gatewaySlots)}
		for _, name := range []string{"p0", "p1"} {
			if r.IntN(3) > 0 || name == "p1" && len(op.Sections) == 0 {
				op.Sections = append(op.Sections, name+":"+pick(r, []string{"All", "All", "All", "All", "Selector", "Same", "Elsewhere", "Terminate"}))
			}
		}
		op.Sections = append(op.Sections, genTCPSections(r, op.Gateway)...)
		return op
	case x == 4:
		return Op{Kind: DeleteGateway, Gateway: r.IntN(gatewaySlots)}
	case x >= 8:
		return genTCPClass(r, m)
	}
	op := genPutClass(r, r.IntN(classSlots))
	op.Type, op.Range, op.NodeAnnotation = v1alpha1.ServiceTypeClusterIP, false, false
	op.Template = 1 + r.IntN(len(templates))
	op.Parents = nil
	// Mostly sections that are there, now and then any (a Gateway that
	// never exists, a section it lacks).
	var there []string
	for g, sections := range m.gateways {
		for _, s := range sections {
			name, _, _ := strings.Cut(s, ":")
			there = append(there, fmt.Sprintf("g%d/%s", g, name))
		}
	}
	slices.Sort(there) // map order is random; a seed's history is not
	for range 1 + r.IntN(2) {
		p := fmt.Sprintf("g%d/%s", r.IntN(gatewaySlots+1), pick(r, []string{"p0", "p0", "p1"}))
		if len(there) > 0 && r.IntN(5) > 0 {
			p = pick(r, there)
		}
		if !strings.Contains(strings.Join(op.Parents, ","), p) {
			op.Parents = append(op.Parents, p)
		}
	}
	return op
}

// takeGateways records the world's routes and Gateways in s (nothing
// without Traefik).
func (s *Snapshot) takeGateways(ctx context.Context, c client.Reader) error {
	if !s.World.Gateway {
		return nil
	}
	var gws gwv1.GatewayList
	if err := c.List(ctx, &gws, client.InNamespace(s.World.GatewayNamespace())); err != nil {
		return fmt.Errorf("list Gateways: %w", err)
	}
	s.Gateways = map[string]*gwv1.Gateway{}
	for i := range gws.Items {
		s.Gateways[gws.Items[i].Name] = &gws.Items[i]
	}
	for t, ns := range s.World.Tenants {
		var routes gwv1.TLSRouteList
		if err := c.List(ctx, &routes, client.InNamespace(ns), client.MatchingLabels{gateway.LabelManagedBy: gateway.LabelManagedByValue}); err != nil {
			return fmt.Errorf("list TLSRoutes in %s: %w", ns, err)
		}
		s.Routes[t] = routes.Items
	}
	return s.takeTCPRoutes(ctx, c)
}

// routeOwner is the Listener of tenant t that controls route r, or nil.
func (s *Snapshot) routeOwner(t int, r *gwv1.TLSRoute) *v1alpha1.Listener {
	return s.controller(t, r.OwnerReferences)
}
