package listener

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=tlsroutes,verbs=get;list;watch;create;patch;delete

// Event reasons of gateway classes.
const (
	EventRouteApplied = "RouteApplied"
	EventRouteDeleted = "RouteDeleted"
)

// gatewayRecheck is how often a Listener of a gateway class that is not
// attached looks again without an event: before the Gateway API is
// installed (gatewayapi.go notices it within this period too), nothing
// sends one.
const gatewayRecheck = 15 * time.Second

// gatewayStatus keeps the routes of Listener l of gateway class class
// (svc is its Service) and computes what it publishes: the name the class
// gives it, with each Gateway listener's port, once every route is
// attached. host is the name l may publish ("" when it is too long or
// another Listener or a route not made by the operator has it).
func (r *listenerReconciler) gatewayStatus(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, svc *corev1.Service, host string) ([]v1alpha1.ListenerIngress, verdict, error) {
	if !r.opts.GatewayAPI {
		return nil, verdict{reason: v1alpha1.ReasonGatewayAPIMissing, message: fmt.Sprintf(
			"ListenerClass %s routes through a Gateway, and this operator runs with --gateway-api=false (the chart's gatewayAPI.enabled: false); ask an administrator to turn it on, or name another class", class.Name)}, nil
	}
	if !r.gatewayAPI.Watching() {
		return nil, verdict{reason: v1alpha1.ReasonGatewayAPIMissing, message: fmt.Sprintf(
			"ListenerClass %s routes through a Gateway, and the Gateway API (gateway.networking.k8s.io/v1 Gateway and TLSRoute) is not installed; install its CRDs and a Gateway controller, or name another class (the operator notices an install within %s)",
			class.Name, gatewayRecheck)}, nil
	}
	if class.Spec.Gateway.EffectiveRouteKind() == v1alpha1.RouteKindTCPRoute {
		return r.tcpStatus(ctx, l, class, svc) // gatewaytcp.go
	}
	if err := r.deleteStaleTCPRoutes(ctx, l, nil); err != nil { // of a TCPRoute class it left
		return nil, verdict{}, err
	}
	bindings, errs := gateway.Bindings(class, l)
	if len(errs) > 0 {
		return nil, verdict{reason: v1alpha1.ReasonInvalid, message: errs.ToAggregate().Error()}, r.deleteStaleRoutes(ctx, l, nil)
	}
	if host == "" {
		// Without its name the route would route someone else's, or none.
		return nil, verdict{reason: v1alpha1.ReasonHostnameConflict, message: fmt.Sprintf(
				"ListenerClass %s routes this Listener by the DNS name its spec.hostname.template gives it, and that name cannot be published (condition HostnamePublished says why), so it has no route", class.Name)},
			r.deleteStaleRoutes(ctx, l, nil)
	}
	ports := map[string]int32{}
	keep := map[string]bool{}
	for _, b := range bindings {
		port, v, err := r.checkParents(ctx, b, host)
		if err != nil || !v.none() {
			return nil, v, err
		}
		ports[b.Port.Name] = port
		keep[b.RouteName] = true
	}
	if err := r.deleteStaleRoutes(ctx, l, withPredecessors(keep, l, bindings)); err != nil {
		return nil, verdict{}, err
	}
	// Every route is made before any is judged, so that one the Gateway's
	// controller has not accepted yet does not hold back the others.
	routes := make([]*gwv1.TLSRoute, len(bindings))
	for i, b := range bindings {
		route, v, err := r.ensureRoute(ctx, l, gateway.Route(l, b, host, svc.Name))
		if err != nil || !v.none() {
			return nil, v, err
		}
		routes[i] = route
	}
	for i, b := range bindings {
		for _, p := range b.Parents {
			if a := gateway.Attached(routes[i], p); !a.Attached {
				return nil, notAttached(routes[i], p, a, l.Namespace), nil
			}
		}
	}
	if err := r.deleteStaleRoutes(ctx, l, keep); err != nil { // the predecessors too, now
		return nil, verdict{}, err
	}
	ings := addresses.GatewayIngress(host, ports)
	return ings, verdict{ready: true, reason: v1alpha1.ReasonReady, message: fmt.Sprintf(
		"%d route(s) attached: %s is reached through the Gateway", len(bindings), host)}, nil
}

func notAttached(route *gwv1.TLSRoute, p v1alpha1.GatewayParentRef, a gateway.Attachment, namespace string) verdict {
	return notAttachedKind("TLSRoute", route.Name, p, a, namespace)
}

// notAttachedKind is the verdict on route name of kind that parent p has
// not attached.
func notAttachedKind(kind, name string, p v1alpha1.GatewayParentRef, a gateway.Attachment, namespace string) verdict {
	said := "has not written a status for it yet"
	if a.Reason != "" {
		said = fmt.Sprintf("reports %s", a.Reason)
		if a.Message != "" {
			said += fmt.Sprintf(" (%s)", a.Message)
		}
	}
	return verdict{reason: v1alpha1.ReasonRouteNotAccepted, message: fmt.Sprintf(
		"%s %s is not attached to listener %q of Gateway %s/%s: the Gateway's controller %s; %s",
		kind, name, p.SectionName, p.Namespace, p.Name, said, gateway.Fix(a.Reason, p, namespace))}
}

// checkParents reads the Gateways of binding b and checks their listeners
// (gateway.CheckSection) and hostnames. port is the one clients connect to:
// the first parent's; parents that disagree are a problem, since a
// Listener publishes one port per port name. The verdict is on a problem
// (none when there is none).
func (r *listenerReconciler) checkParents(ctx context.Context, b gateway.Binding, host string) (int32, verdict, error) {
	var port int32
	for i, p := range b.Parents {
		gw := &gwv1.Gateway{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, gw); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, verdict{reason: v1alpha1.ReasonGatewayNotFound, message: fmt.Sprintf(
					"Gateway %s/%s, which the ListenerClass routes port %q through, does not exist; create it, or ask an administrator to fix the class's spec.gateway.parentRefs (the addresses published last stay)",
					p.Namespace, p.Name, b.Port.Name)}, nil
			}
			return 0, verdict{}, fmt.Errorf("get gateway %s/%s: %w", p.Namespace, p.Name, err)
		}
		s, problem := gateway.CheckSection(gw, p)
		if problem == "" && !gateway.HostnameMatches(s.Hostname, host) {
			problem = fmt.Sprintf("listener %q of Gateway %s/%s only admits hostnames %s, and this Listener's is %s; ask an administrator to align the class's spec.hostname.template with the Gateway listener's hostname",
				p.SectionName, p.Namespace, p.Name, s.Hostname, host)
		}
		if problem == "" && i > 0 && s.Port != port {
			problem = fmt.Sprintf("the Gateway listeners named %q listen on different ports (%d and %d on Gateway %s/%s), and a Listener publishes one port per port name; give them one port",
				p.SectionName, port, s.Port, p.Namespace, p.Name)
		}
		if problem != "" {
			return 0, verdict{reason: v1alpha1.ReasonGatewayListenerInvalid, message: problem}, nil
		}
		port = s.Port
	}
	return port, verdict{}, nil
}

// ensureRoute makes the route what want says, with server-side apply under
// the route field manager, and returns it as the API server has it. A
// route of that name that is not this Listener's is left alone (the
// verdict says so; none otherwise).
func (r *listenerReconciler) ensureRoute(ctx context.Context, l *v1alpha1.Listener, want *gwv1.TLSRoute) (*gwv1.TLSRoute, verdict, error) {
	have := &gwv1.TLSRoute{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		have = nil
	case err != nil:
		return nil, verdict{}, fmt.Errorf("get tlsroute %s/%s: %w", want.Namespace, want.Name, err)
	}
	own := false
	if have != nil {
		if own, err = r.isOwn(ctx, have, l); err != nil {
			return nil, verdict{}, err
		}
	}
	switch {
	case have != nil && !own:
		return nil, verdict{reason: v1alpha1.ReasonForeignRoute, message: fmt.Sprintf(
			"TLSRoute %s exists and is not this Listener's, so the operator leaves it alone and the Listener has no route; delete or rename that TLSRoute, or rename the Listener", want.Name)}, nil
	case have != nil && routeUpToDate(have, want):
		return have, verdict{}, nil
	}
	obj, v, err := r.applyRoute(ctx, l, want, "TLSRoute", "")
	if err != nil || !v.none() {
		return nil, v, err
	}
	got := &gwv1.TLSRoute{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, got); err != nil {
		return nil, verdict{}, fmt.Errorf("read back tlsroute %s/%s: %w", want.Namespace, want.Name, err)
	}
	if have == nil || !equality.Semantic.DeepEqual(have.Spec, got.Spec) {
		r.recorder.Eventf(l, nil, corev1.EventTypeNormal, EventRouteApplied, "Apply", "Applied TLSRoute %s for %s", want.Name, strings.Join(hostnames(want), ", "))
	}
	return got, verdict{}, nil
}

// applyRoute applies route want of kind (as apiVersion; "" keeps want's)
// with server-side apply under the route field manager, and returns the
// API server's answer. A refusal that retrying alone will not change is
// the verdict (routeRefused; none otherwise).
func (r *listenerReconciler) applyRoute(ctx context.Context, l *v1alpha1.Listener, want client.Object, kind, apiVersion string) (*unstructured.Unstructured, verdict, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return nil, verdict{}, fmt.Errorf("%s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	delete(u, "status")
	obj := &unstructured.Unstructured{Object: u}
	if apiVersion != "" {
		obj.SetAPIVersion(apiVersion)
	}
	err = r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1alpha1.RouteFieldManager), client.ForceOwnership)
	if metrics.CountWrite(ControllerName, kind, "apply", err) != nil {
		if v, ok := routeRefused(kind, want.GetName(), err); ok {
			return nil, v, nil
		}
		return nil, verdict{}, fmt.Errorf("apply %s %s/%s for listener %s: %w", kind, want.GetNamespace(), want.GetName(), l.Name, err)
	}
	return obj, verdict{}, nil
}

// routeUpToDate reports whether have already is what want says: its spec,
// the operator's labels and its owner (other managers' labels and
// annotations stay).
func routeUpToDate(have, want *gwv1.TLSRoute) bool {
	return routeMetaUpToDate(have, want) && equality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// routeMetaUpToDate reports whether route have carries want's labels and
// owners.
func routeMetaUpToDate(have, want metav1.Object) bool {
	for k, v := range want.GetLabels() {
		if have.GetLabels()[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have.GetOwnerReferences(), want.GetOwnerReferences())
}

func hostnames(r *gwv1.TLSRoute) []string {
	out := make([]string, len(r.Spec.Hostnames))
	for i, h := range r.Spec.Hostnames {
		out[i] = string(h)
	}
	return out
}

// leaveGateway deletes the routes the operator made for l unless l has
// ports and names a class that routes them through a Gateway, or names a
// class that is gone (nil with ports: what was made stays, as its Service
// does). So a class that stopped routing, a Listener that names another
// class, names none (spec.className unset: no Service, no address) or
// dropped its ports loses its routes, or the Gateway would go on routing
// its name (found by test/robustness, RoutesFollowTheirClass).
func (r *listenerReconciler) leaveGateway(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) error {
	named := l.Spec.ClassName != nil && *l.Spec.ClassName != ""
	if named && len(l.Spec.Ports) > 0 && (class == nil || class.Spec.Gateway != nil) {
		return nil
	}
	if err := r.deleteStaleTCPRoutes(ctx, l, nil); err != nil {
		return err
	}
	return r.deleteStaleRoutes(ctx, l, nil)
}

// leaveAllClasses deletes what the operator made for a Listener that names
// no class: its Services and its routes.
func (r *listenerReconciler) leaveAllClasses(ctx context.Context, l *v1alpha1.Listener) error {
	if err := r.deleteStaleServices(ctx, l, ""); err != nil {
		return err
	}
	return r.leaveGateway(ctx, l, nil)
}

// staleRoute says whether rt, a route labelled as l's, is one l deletes:
// keep does not name it, and it is l's own (isOwn: l's, or its
// predecessor's under its name), not another's that carries the label.
func (r *listenerReconciler) staleRoute(ctx context.Context, rt metav1.Object, l *v1alpha1.Listener, keep map[string]bool) (bool, error) {
	if keep[rt.GetName()] {
		return false, nil
	}
	return r.isOwn(ctx, rt, l)
}

// deleteStaleRoutes deletes the routes the operator made for l that keep
// does not name (all of them for a nil keep): a port removed, a class
// that stopped routing, a name l may no longer publish.
func (r *listenerReconciler) deleteStaleRoutes(ctx context.Context, l *v1alpha1.Listener, keep map[string]bool) error {
	if !r.gatewayAPI.Watching() {
		return nil
	}
	var routes gwv1.TLSRouteList
	if err := r.client.List(ctx, &routes, client.InNamespace(l.Namespace), client.MatchingLabels{v1alpha1.LabelRouteListener: names.ListenerLabelValue(l.Name)}); err != nil {
		return fmt.Errorf("list tlsroutes of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	for i := range routes.Items {
		rt := &routes.Items[i]
		stale, err := r.staleRoute(ctx, rt, l, keep)
		if err != nil {
			return err
		}
		if !stale {
			continue
		}
		err = r.client.Delete(ctx, rt, client.Preconditions{UID: &rt.UID})
		if metrics.CountWrite(ControllerName, "TLSRoute", "delete", err) != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete tlsroute %s/%s of listener %s: %w", rt.Namespace, rt.Name, l.Name, err)
		}
		r.recorder.Eventf(l, nil, corev1.EventTypeNormal, EventRouteDeleted, "Delete", "Deleted TLSRoute %s, which this Listener no longer routes through", rt.Name)
	}
	return nil
}

// withPredecessors is keep with the names the routes of bindings had
// before names.RouteName made them unique in the namespace (the Listener's
// own name when it has one port, else <listener>-<port>): after an upgrade
// such a route keeps routing until its successor is attached, and is
// deleted then.
func withPredecessors(keep map[string]bool, l *v1alpha1.Listener, bindings []gateway.Binding) map[string]bool {
	out := maps.Clone(keep)
	for _, b := range bindings {
		if len(l.Spec.Ports) == 1 {
			out[l.Name] = true
		} else {
			out[l.Name+"-"+b.Port.Name] = true
		}
	}
	return out
}

// routeRefused is the verdict on a route the API server refused to apply
// with an answer that retrying alone will not change (invalid, forbidden
// by an admission policy, a quota or the operator's permissions, or an
// internal error such as a webhook that fails): the Listener says so
// rather than only the operator's log. It is looked at again after
// gatewayRecheck (recheckAfter) and on every event of the Listener.
func routeRefused(kind, name string, err error) (verdict, bool) {
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) && !apierrors.IsInternalError(err) {
		return verdict{}, false
	}
	return verdict{reason: v1alpha1.ReasonRouteRefused, message: fmt.Sprintf(
		"the API server refused %s %s: %s; the Listener has no route until it is accepted (the operator tries again every %s): fix or ask an administrator about what the answer names (an admission policy, a quota on %ss, the operator's permissions)",
		kind, name, apiAnswer(err), gatewayRecheck, strings.ToLower(kind))}, true
}

// apiAnswer is the message of the API server's answer err, or err itself
// when it carries none.
func apiAnswer(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
