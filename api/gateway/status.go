package gateway

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Attachment is what a route's status says of one of its parents.
type Attachment struct {
	Attached bool
	// Reason is the parent's reason for a route that is not attached:
	// the reason of its Accepted or ResolvedRefs condition that is not
	// True, or "" when the parent wrote nothing (yet) for this generation.
	Reason  string
	Message string
}

// Attached reads the route's status for parent p: attached when the
// Gateway's controller wrote Accepted and ResolvedRefs True for the
// route's current generation. Accepted alone is not enough: a route
// whose backend is missing is still Accepted.
func Attached(route *gwv1.TLSRoute, p v1alpha1.GatewayParentRef) Attachment {
	return attached(&route.ObjectMeta, route.Status.Parents, p)
}

// TCPAttached is Attached for a TCPRoute.
func TCPAttached(route *gwv1.TCPRoute, p v1alpha1.GatewayParentRef) Attachment {
	return attached(&route.ObjectMeta, route.Status.Parents, p)
}

// TCPRefused reports whether the Gateway's controller refused route on
// parent p for the route's current generation (Accepted False, for
// example NotAllowedByListeners): the route is not attached there, so it
// holds nothing of p. A route it has not judged yet is not refused.
func TCPRefused(route *gwv1.TCPRoute, p v1alpha1.GatewayParentRef) bool {
	for _, ps := range parentStatuses(&route.ObjectMeta, route.Status.Parents, p) {
		acc := meta.FindStatusCondition(ps.Conditions, string(gwv1.RouteConditionAccepted))
		if acc != nil && acc.ObservedGeneration == route.Generation && acc.Status == metav1.ConditionFalse {
			return true
		}
	}
	return false
}

func attached(route *metav1.ObjectMeta, parents []gwv1.RouteParentStatus, p v1alpha1.GatewayParentRef) Attachment {
	for _, ps := range parentStatuses(route, parents, p) {
		acc := meta.FindStatusCondition(ps.Conditions, string(gwv1.RouteConditionAccepted))
		res := meta.FindStatusCondition(ps.Conditions, string(gwv1.RouteConditionResolvedRefs))
		for _, c := range []*metav1.Condition{acc, res} {
			if c != nil && c.ObservedGeneration == route.Generation && c.Status != metav1.ConditionTrue {
				return Attachment{Reason: c.Reason, Message: c.Message}
			}
		}
		if current(acc, route.Generation) && current(res, route.Generation) {
			return Attachment{Attached: true}
		}
	}
	return Attachment{}
}

// parentStatuses are the statuses a route's controllers wrote for parent
// p (one per controller that judges it).
func parentStatuses(route *metav1.ObjectMeta, parents []gwv1.RouteParentStatus, p v1alpha1.GatewayParentRef) []gwv1.RouteParentStatus {
	want := ParentReference(p)
	var out []gwv1.RouteParentStatus
	for _, ps := range parents {
		if sameParent(ps.ParentRef, want, route.Namespace) {
			out = append(out, ps)
		}
	}
	return out
}

func current(c *metav1.Condition, generation int64) bool {
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// sameParent compares parentRefs with the API's defaults filled in (group
// gateway.networking.k8s.io, kind Gateway, the route's namespace).
func sameParent(a, b gwv1.ParentReference, routeNamespace string) bool {
	norm := func(r gwv1.ParentReference) string {
		g, k, ns, sec := Group, "Gateway", routeNamespace, ""
		if r.Group != nil {
			g = string(*r.Group)
		}
		if r.Kind != nil {
			k = string(*r.Kind)
		}
		if r.Namespace != nil {
			ns = string(*r.Namespace)
		}
		if r.SectionName != nil {
			sec = string(*r.SectionName)
		}
		return fmt.Sprintf("%s/%s/%s/%s/%s", g, k, ns, r.Name, sec)
	}
	return norm(a) == norm(b)
}

// Fix is what to do about a route a Gateway did not accept, by the
// reason its controller gives.
func Fix(reason string, p v1alpha1.GatewayParentRef, namespace string) string {
	gw := fmt.Sprintf("listener %q of Gateway %s/%s", p.SectionName, p.Namespace, p.Name)
	switch gwv1.RouteConditionReason(reason) {
	case gwv1.RouteReasonNotAllowedByListeners:
		return fmt.Sprintf("%s does not admit routes from namespace %s (its allowedRoutes.namespaces); ask the Gateway's owner to admit this namespace, or use another ListenerClass", gw, namespace)
	case gwv1.RouteReasonNoMatchingListenerHostname:
		return fmt.Sprintf("the hostname the class gives this Listener is outside the hostname of %s; ask an administrator to align the class's spec.hostname.template with the Gateway listener's hostname", gw)
	case gwv1.RouteReasonNoMatchingParent:
		return fmt.Sprintf("%s does not exist; ask an administrator to add it or fix the class's spec.gateway.parentRefs", gw)
	case gwv1.RouteReasonBackendNotFound, gwv1.RouteReasonRefNotPermitted, gwv1.RouteReasonInvalidKind:
		return "the Gateway's controller cannot reach the Listener's Service yet; the operator keeps the Service, so this clears once the controller sees it"
	case "":
		return fmt.Sprintf("the controller of Gateway %s/%s has not written the route's status yet; if this lasts, check that the Gateway's controller runs", p.Namespace, p.Name)
	}
	return fmt.Sprintf("see the route's status.parents and the events of Gateway %s/%s", p.Namespace, p.Name)
}
