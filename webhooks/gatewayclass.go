package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get

// gatewayChecks reads the Gateways a gateway class names (live: the
// webhooks hold no Gateways, and classes are written rarely) and refuses
// what cannot carry its routes: no Gateway API at all, a TLSRoute class's
// Gateway listener that is not TLS Passthrough for TLSRoutes or does not
// admit the names the class's template renders, a TCPRoute class's that
// is not TCP for TCPRoutes. A Gateway that does not exist yet is
// a warning: it may be created after the class.
func (v *classValidator) gatewayChecks(ctx context.Context, lc *v1alpha1.ListenerClass) (field.ErrorList, []string) {
	g := lc.Spec.Gateway
	if g == nil {
		return nil, nil
	}
	path := field.NewPath("spec", "gateway", "parentRefs")
	var errs field.ErrorList
	var warnings []string
	for i, p := range g.ParentRefs {
		gw := &gwv1.Gateway{}
		err := v.lookup.live.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, gw)
		switch {
		case meta.IsNoMatchError(err):
			return field.ErrorList{field.Invalid(field.NewPath("spec", "gateway"), p.Name,
				"the Gateway API (gateway.networking.k8s.io/v1 Gateway and TLSRoute) is not installed in this cluster, so no Listener of this class could be routed; install its CRDs and a Gateway controller first, or remove spec.gateway")}, nil
		case apierrors.IsNotFound(err):
			warnings = append(warnings, fmt.Sprintf("spec.gateway.parentRefs[%d]: Gateway %s/%s does not exist yet; the class's Listeners stay not Ready (GatewayNotFound) until it does", i, p.Namespace, p.Name))
			continue
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("spec.gateway.parentRefs[%d]: could not read Gateway %s/%s (%v); its listener is checked when Listeners use the class", i, p.Namespace, p.Name, err))
			continue
		}
		if g.EffectiveRouteKind() == v1alpha1.RouteKindTCPRoute {
			if _, problem := gateway.CheckTCPSection(gw, p); problem != "" {
				errs = append(errs, field.Invalid(path.Index(i).Child("sectionName"), p.SectionName, problem))
			}
			continue
		}
		s, problem := gateway.CheckSection(gw, p)
		if problem == "" && lc.Spec.Hostname != nil {
			// Any name the template renders falls under the listener's
			// hostname or none does (only the placeholders vary).
			if host, err := addresses.RenderHostname(lc.Spec.Hostname, "listener", "namespace"); err == nil && !gateway.HostnameMatches(s.Hostname, host) {
				problem = fmt.Sprintf("listener %q of Gateway %s/%s only admits hostnames %s, and spec.hostname.template %q renders names such as %s; make the template end in the listener's domain, or name another listener",
					p.SectionName, p.Namespace, p.Name, s.Hostname, lc.Spec.Hostname.Template, host)
			}
		}
		if problem != "" {
			errs = append(errs, field.Invalid(path.Index(i).Child("sectionName"), p.SectionName, problem))
		}
	}
	return errs, warnings
}
