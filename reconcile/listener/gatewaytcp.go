package listener

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=tcproutes,verbs=get;list;watch;create;patch;delete

// tcpStatus keeps the TCPRoutes of Listener l of TCPRoute class class (svc
// is its Service), one per port on a section of the class's block of its
// own (gateway.TCPSections), and computes what it publishes: the
// Gateway's address with each section's port, once every route is
// attached.
func (r *listenerReconciler) tcpStatus(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, svc *corev1.Service) ([]v1alpha1.ListenerIngress, verdict, error) {
	if r.gatewayAPI.TCPVersion() == "" {
		return nil, verdict{reason: v1alpha1.ReasonGatewayAPIMissing, message: fmt.Sprintf(
			"ListenerClass %s routes through a Gateway with TCPRoutes, and the API server serves no gateway.networking.k8s.io TCPRoute (v1 or v1alpha2); install the Gateway API's TCPRoute CRD (docs/install.md, \"Gateway classes\"), or name another class (the operator notices an install within %s)",
			class.Name, gatewayRecheck)}, nil
	}
	if err := r.deleteStaleRoutes(ctx, l, nil); err != nil { // TLSRoutes of a class it left
		return nil, verdict{}, err
	}
	own, held, err := r.sectionHolders(ctx, l, class)
	if err != nil {
		return nil, verdict{}, err
	}
	pods, err := r.podNamesOf(ctx, l)
	if err != nil {
		return nil, verdict{}, err
	}
	bindings, err := gateway.TCPSections(class, l, claims.Replica(l, pods), own, held)
	keep := map[string]bool{}
	for _, b := range bindings {
		keep[b.RouteName] = true
	}
	var exhausted *gateway.SectionsExhausted
	var taken *gateway.SectionTaken
	if errors.As(err, &exhausted) || errors.As(err, &taken) {
		// Never a takeover: the routes of ports whose section the
		// Listener cannot have go (two Listeners that picked one free
		// section at once each wrote one there, and the section is the
		// other's), the others stay as they are.
		if err := r.deleteStaleTCPRoutes(ctx, l, keep); err != nil {
			return nil, verdict{}, err
		}
		reason := v1alpha1.ReasonGatewaySectionTaken
		if exhausted != nil {
			reason = v1alpha1.ReasonGatewaySectionsExhausted
		}
		return nil, verdict{reason: reason, message: err.Error()}, nil
	}
	sections := make([]addresses.SectionAddress, len(bindings))
	for i, b := range bindings {
		s, v, err := r.checkTCPParent(ctx, b)
		if err != nil || !v.none() {
			return nil, v, err
		}
		sections[i] = s
	}
	if err := r.deleteStaleTCPRoutes(ctx, l, keep); err != nil {
		return nil, verdict{}, err
	}
	routes := make([]*gwv1.TCPRoute, len(bindings))
	for i, b := range bindings {
		route, v, err := r.ensureTCPRoute(ctx, l, gateway.TCPRoute(l, b, svc.Name))
		if err != nil || !v.none() {
			return nil, v, err
		}
		routes[i] = route
	}
	for i, b := range bindings {
		if a := gateway.TCPAttached(routes[i], b.Parent); !a.Attached {
			return nil, notAttachedKind("TCPRoute", routes[i].Name, b.Parent, a, l.Namespace), nil
		}
	}
	return addresses.TCPGatewayIngress(sections), verdict{ready: true, reason: v1alpha1.ReasonReady, message: fmt.Sprintf(
		"%d TCP route(s) attached: this Listener is reached through the Gateway's address", len(bindings))}, nil
}

// sectionHolders reads who holds each section of class's block: own are
// the sections l's routes hold (port name → entry), held the entries
// another route holds. A section both hold is l's when every other route
// on it is one the operator made for another Listener later than l's
// (the race of two Listeners picking one free section: the later moves);
// any route the operator did not make holds it against l. A route the
// Gateway refused on the section holds nothing, and one an earlier
// Listener of l's name left (predecessorRoute) is l's.
func (r *listenerReconciler) sectionHolders(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) (map[string]int, map[int]bool, error) {
	own, held := map[string]int{}, map[int]bool{}
	portOf := map[string]string{}
	for _, p := range l.Spec.Ports {
		portOf[names.RouteName(l.Name, p.Name)] = p.Name
	}
	for k, p := range class.Spec.Gateway.ParentRefs {
		whole := p
		whole.SectionName = ""
		var ours *gwv1.TCPRoute
		var others []gwv1.TCPRoute
		for _, parent := range []v1alpha1.GatewayParentRef{p, whole} {
			routes, err := r.listTCPRoutes(ctx, client.MatchingFields{IndexTCPRouteSection: gateway.SectionKey(parent)})
			if err != nil {
				return nil, nil, err
			}
			for i := range routes {
				rt := &routes[i]
				_, isPort := portOf[rt.Name]
				own, err := r.isOwn(ctx, rt, l)
				if err != nil {
					return nil, nil, err
				}
				switch {
				case !own:
					// A route the Gateway refused there (a namespace it
					// does not admit) holds nothing: otherwise anyone
					// able to write a route, or a Listener, where the
					// Gateway admits nothing could deny a section.
					if gateway.TCPRefused(rt, parent) {
						continue
					}
					others = append(others, *rt)
				case isPort:
					ours = rt
				}
				// l's route of a port it no longer has holds nothing: it
				// is deleted once l's routes are made.
			}
		}
		if len(others) > 0 && (ours == nil || !holdsFirst(ours, others)) {
			held[k] = true
			continue
		}
		if ours != nil {
			own[portOf[ours.Name]] = k
		}
	}
	return own, held, nil
}

// holdsFirst reports whether route ours keeps its section against others:
// all of them are the operator's, made later (by creation, then namespace
// and name).
func holdsFirst(ours *gwv1.TCPRoute, others []gwv1.TCPRoute) bool {
	for i := range others {
		o := &others[i]
		if _, ok := gateway.MadeFor(o); !ok {
			return false
		}
		if o.CreationTimestamp.Before(&ours.CreationTimestamp) ||
			o.CreationTimestamp.Equal(&ours.CreationTimestamp) && o.Namespace+"/"+o.Name < ours.Namespace+"/"+ours.Name {
			return false
		}
	}
	return true
}

// checkTCPParent reads the Gateway of binding b, checks its section
// (gateway.CheckTCPSection) and finds what the port publishes: the
// Gateway's address and the section's port. The verdict is on a problem
// (none when there is none).
func (r *listenerReconciler) checkTCPParent(ctx context.Context, b gateway.TCPBinding) (addresses.SectionAddress, verdict, error) {
	p := b.Parent
	gw := &gwv1.Gateway{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, gw); err != nil {
		if apierrors.IsNotFound(err) {
			return addresses.SectionAddress{}, verdict{reason: v1alpha1.ReasonGatewayNotFound, message: fmt.Sprintf(
				"Gateway %s/%s, which the ListenerClass routes port %q through (section %q), does not exist; create it, or ask an administrator to fix the class's spec.gateway.parentRefs (the addresses published last stay)",
				p.Namespace, p.Name, b.Port.Name, p.SectionName)}, nil
		}
		return addresses.SectionAddress{}, verdict{}, fmt.Errorf("get gateway %s/%s: %w", p.Namespace, p.Name, err)
	}
	s, problem := gateway.CheckTCPSection(gw, p)
	if problem != "" {
		return addresses.SectionAddress{}, verdict{reason: v1alpha1.ReasonGatewayListenerInvalid, message: problem}, nil
	}
	addr, typ, ok := gateway.GatewayAddress(gw)
	if !ok {
		return addresses.SectionAddress{}, verdict{reason: v1alpha1.ReasonGatewayAddressMissing, message: fmt.Sprintf(
			"Gateway %s/%s has no IP or hostname in its status.addresses, and a TCPRoute class's Listeners publish that address; check that the Gateway's controller runs and is told its address (the addresses published last stay)",
			p.Namespace, p.Name)}, nil
	}
	return addresses.SectionAddress{Port: b.Port.Name, Address: addr, AddressType: typ, SectionPort: s.Port}, verdict{}, nil
}

// ensureTCPRoute makes the TCPRoute what want says, with server-side
// apply in the version the operator watches, and returns it as the API
// server has it (as v1). A route of that name that is not this Listener's
// is left alone (the verdict says so; none otherwise).
func (r *listenerReconciler) ensureTCPRoute(ctx context.Context, l *v1alpha1.Listener, want *gwv1.TCPRoute) (*gwv1.TCPRoute, verdict, error) {
	have, err := r.getTCPRoute(ctx, client.ObjectKeyFromObject(want))
	own := false
	if err == nil && have != nil {
		own, err = r.isOwn(ctx, have, l)
	}
	switch {
	case err != nil:
		return nil, verdict{}, fmt.Errorf("get tcproute %s/%s: %w", want.Namespace, want.Name, err)
	case have != nil && !own:
		return nil, verdict{reason: v1alpha1.ReasonForeignRoute, message: fmt.Sprintf(
			"TCPRoute %s exists and is not this Listener's, so the operator leaves it alone and the Listener has no route; delete or rename that TCPRoute, or rename the Listener", want.Name)}, nil
	case have != nil && tcpRouteUpToDate(have, want):
		return have, verdict{}, nil
	}
	obj, v, err := r.applyRoute(ctx, l, want, "TCPRoute", gateway.Group+"/"+r.gatewayAPI.TCPVersion())
	if err != nil || !v.none() {
		return nil, v, err
	}
	got, err := asTCPRoute(obj)
	if err != nil {
		return nil, verdict{}, fmt.Errorf("read back tcproute %s/%s: %w", want.Namespace, want.Name, err)
	}
	if have == nil || !equality.Semantic.DeepEqual(have.Spec, got.Spec) {
		r.recorder.Eventf(l, nil, corev1.EventTypeNormal, EventRouteApplied, "Apply", "Applied TCPRoute %s on section %s of Gateway %s/%s",
			want.Name, *want.Spec.ParentRefs[0].SectionName, *want.Spec.ParentRefs[0].Namespace, want.Spec.ParentRefs[0].Name)
	}
	return got, verdict{}, nil
}

// tcpRouteUpToDate is routeUpToDate for a TCPRoute.
func tcpRouteUpToDate(have, want *gwv1.TCPRoute) bool {
	return routeMetaUpToDate(have, want) && equality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// deleteStaleTCPRoutes deletes the TCPRoutes the operator made for l that
// keep does not name (all of them for a nil keep).
func (r *listenerReconciler) deleteStaleTCPRoutes(ctx context.Context, l *v1alpha1.Listener, keep map[string]bool) error {
	version := r.gatewayAPI.TCPVersion()
	if version == "" {
		return nil
	}
	routes, err := r.listTCPRoutes(ctx, client.InNamespace(l.Namespace), client.MatchingLabels{v1alpha1.LabelRouteListener: names.ListenerLabelValue(l.Name)})
	if err != nil {
		return err
	}
	for i := range routes {
		rt := &routes[i]
		stale, err := r.staleRoute(ctx, rt, l, keep)
		if err != nil {
			return err
		}
		if !stale {
			continue
		}
		del := tcpRouteObject(version)
		del.SetNamespace(rt.Namespace)
		del.SetName(rt.Name)
		err = r.client.Delete(ctx, del, client.Preconditions{UID: &rt.UID})
		if metrics.CountWrite(ControllerName, "TCPRoute", "delete", err) != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete tcproute %s/%s of listener %s: %w", rt.Namespace, rt.Name, l.Name, err)
		}
		r.recorder.Eventf(l, nil, corev1.EventTypeNormal, EventRouteDeleted, "Delete", "Deleted TCPRoute %s, which this Listener no longer routes through", rt.Name)
	}
	return nil
}
