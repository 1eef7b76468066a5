package gateway

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Binding is one Listener port routed through the Gateway listeners of one
// section name: one route, attached to every parentRef of that name.
type Binding struct {
	Port      v1alpha1.ListenerPort
	Parents   []v1alpha1.GatewayParentRef
	RouteName string
}

// sections groups a class's parentRefs by section name, in the class's
// order.
func sections(g *v1alpha1.ListenerGateway) (names []string, bySection map[string][]v1alpha1.GatewayParentRef) {
	bySection = map[string][]v1alpha1.GatewayParentRef{}
	for _, p := range g.ParentRefs {
		if _, ok := bySection[p.SectionName]; !ok {
			names = append(names, p.SectionName)
		}
		bySection[p.SectionName] = append(bySection[p.SectionName], p)
	}
	return names, bySection
}

// Bindings routes each port of Listener l through a section of its gateway
// class: a Listener port goes through the section of its own name; when
// the class names one section only, a Listener with one port goes through
// it whatever the port's name. A port without a section cannot be routed:
// the error names the port, the sections and the fix. Each route is named
// after the Listener and the port (names.RouteName: unique in the
// namespace, always a valid name). A TCPRoute class routes every port
// through a section of its block (TCPSections): none for it here.
func Bindings(class *v1alpha1.ListenerClass, l *v1alpha1.Listener) ([]Binding, field.ErrorList) {
	g := class.Spec.Gateway
	if g == nil || g.EffectiveRouteKind() != v1alpha1.RouteKindTLSRoute {
		return nil, nil
	}
	sectionNames, bySection := sections(g)
	path := field.NewPath("spec", "ports")
	var out []Binding
	var errs field.ErrorList
	for i, p := range l.Spec.Ports {
		section := p.Name
		if len(sectionNames) == 1 && len(l.Spec.Ports) == 1 {
			section = sectionNames[0]
		}
		parents, ok := bySection[section]
		if !ok {
			errs = append(errs, field.Invalid(path.Index(i).Child("name"), p.Name, fmt.Sprintf(
				"ListenerClass %s routes ports through the Gateway listeners (sections) %s, and none is named %q, so this port cannot be routed; name each port after a section, or remove the port",
				class.Name, describeSections(sectionNames, bySection), p.Name)))
			continue
		}
		out = append(out, Binding{Port: p, Parents: parents, RouteName: names.RouteName(l.Name, p.Name)})
	}
	return out, errs
}

// describeSections spells sections with their Gateways: "kafka (Gateway
// gw/shared)".
func describeSections(names []string, bySection map[string][]v1alpha1.GatewayParentRef) string {
	var parts []string
	for _, n := range names {
		var gws []string
		for _, p := range bySection[n] {
			gws = append(gws, p.Namespace+"/"+p.Name)
		}
		slices.Sort(gws)
		parts = append(parts, fmt.Sprintf("%q (Gateway %s)", n, strings.Join(gws, ", ")))
	}
	return strings.Join(parts, ", ")
}
