package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// gatewayFields checks a gateway class's own fields: the Service is a
// ClusterIP one (the Gateway is the way in), a TLSRoute class gives every
// Listener a DNS name (its route's hostname) and a TCPRoute class none (it
// publishes the Gateway's address), the parentRefs are names
// and are not repeated, and no field that only shapes node or load
// balancer addresses is set.
func gatewayFields(s *v1alpha1.ListenerClassSpec, spec *field.Path) field.ErrorList {
	g := s.Gateway
	if g == nil {
		return nil
	}
	path := spec.Child("gateway")
	var errs field.ErrorList
	if s.ServiceType != v1alpha1.ServiceTypeClusterIP {
		errs = append(errs, field.Invalid(spec.Child("serviceType"), s.ServiceType,
			"a gateway class's Listeners are reached through the Gateway, so their Services are ClusterIP; set serviceType: ClusterIP, or remove spec.gateway"))
	}
	switch tcp := g.EffectiveRouteKind() == v1alpha1.RouteKindTCPRoute; {
	case tcp && s.Hostname != nil:
		errs = append(errs, field.Forbidden(spec.Child("hostname"),
			"a TCPRoute class publishes the Gateway's address; remove spec.hostname"))
	case !tcp && s.Hostname == nil:
		errs = append(errs, field.Required(spec.Child("hostname"),
			"a gateway class routes each Listener by the DNS name its template renders (the TLS server name clients ask for); set spec.hostname.template, e.g. \"{listener}.{namespace}.gw.example.com\""))
	}
	seen := map[v1alpha1.GatewayParentRef]bool{}
	for i, p := range g.ParentRefs {
		pp := path.Child("parentRefs").Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(p.Name) {
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
		}
		for _, msg := range validation.IsDNS1123Label(p.Namespace) {
			errs = append(errs, field.Invalid(pp.Child("namespace"), p.Namespace, msg))
		}
		for _, msg := range validation.IsDNS1123Subdomain(p.SectionName) {
			errs = append(errs, field.Invalid(pp.Child("sectionName"), p.SectionName, msg))
		}
		if seen[p] {
			errs = append(errs, field.Duplicate(pp, fmt.Sprintf("%s/%s section %s", p.Namespace, p.Name, p.SectionName)))
		}
		seen[p] = true
	}
	if s.NodePortRange != nil {
		errs = append(errs, field.Forbidden(spec.Child("nodePortRange"), "a gateway class's Services have no node ports; remove nodePortRange or spec.gateway"))
	}
	if s.PinnedNodePorts != nil && *s.PinnedNodePorts {
		errs = append(errs, field.Forbidden(spec.Child("pinnedNodePorts"), "a gateway class's addresses do not depend on nodes; remove pinnedNodePorts or spec.gateway"))
	}
	return errs
}
