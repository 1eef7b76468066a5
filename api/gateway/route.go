package gateway

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Group is the Gateway API group.
const Group = gwv1.GroupName

// Labels every route the operator makes carries. They are the operator's
// alone (a Gateway may select routes by label, so a tenant's label could
// move a route): nothing of the Listener's metadata reaches a route.
const (
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	LabelManagedByValue = "listener-operator"
)

// Route is the TLSRoute of Binding b of Listener l: the name host routed
// from every Gateway listener of b to port b.Port of the Listener's
// Service svcName, owned by the Listener. It is exposure, made from the
// class and the operator's names alone: no override or label of the
// Listener reaches it.
func Route(l *v1alpha1.Listener, b Binding, host, svcName string) *gwv1.TLSRoute {
	r := &gwv1.TLSRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "TLSRoute"},
		ObjectMeta: routeMeta(l, b.RouteName),
	}
	for _, p := range b.Parents {
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, ParentReference(p))
	}
	r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(host)}
	r.Spec.Rules = []gwv1.TLSRouteRule{{BackendRefs: backendRefs(svcName, b.Port.Port)}}
	return r
}

// TCPRoute is the TCPRoute of binding b of Listener l: its section routed
// to port b.Port of the Listener's Service svcName, owned by the
// Listener. It is exposure, made from the class and the operator's names
// alone, as Route is. Its apiVersion is v1; the caller writes the version
// the cluster serves (TCPRouteVersion).
func TCPRoute(l *v1alpha1.Listener, b TCPBinding, svcName string) *gwv1.TCPRoute {
	r := &gwv1.TCPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "TCPRoute"},
		ObjectMeta: routeMeta(l, b.RouteName),
	}
	r.Spec.ParentRefs = []gwv1.ParentReference{ParentReference(b.Parent)}
	r.Spec.Rules = []gwv1.TCPRouteRule{{BackendRefs: backendRefs(svcName, b.Port.Port)}}
	return r
}

// routeMeta is the metadata of a route of Listener l: the operator's
// labels, owned by l.
func routeMeta(l *v1alpha1.Listener, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: l.Namespace,
		Labels: map[string]string{
			LabelManagedBy:              LabelManagedByValue,
			v1alpha1.LabelRouteListener: names.ListenerLabelValue(l.Name),
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener",
			Name: l.Name, UID: l.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
}

// backendRefs is a route's one backend, port of Service svcName, with the
// API server's defaults spelled out (core group, kind Service, weight 1):
// a route read back then equals the one made, and a settled Listener
// costs no apply (routeUpToDate).
func backendRefs(svcName string, port int32) []gwv1.BackendRef {
	return []gwv1.BackendRef{{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")),
			Kind:  ptr.To(gwv1.Kind("Service")),
			Name:  gwv1.ObjectName(svcName),
			Port:  ptr.To(gwv1.PortNumber(port)),
		},
		Weight: ptr.To[int32](1),
	}}
}

// ParentReference is the route's parentRef for a class's parentRef, every
// field spelled out so that it compares equal to what the API server and
// the Gateway's controller write back.
func ParentReference(p v1alpha1.GatewayParentRef) gwv1.ParentReference {
	return gwv1.ParentReference{
		Group:       ptr.To(gwv1.Group(Group)),
		Kind:        ptr.To(gwv1.Kind("Gateway")),
		Namespace:   ptr.To(gwv1.Namespace(p.Namespace)),
		Name:        gwv1.ObjectName(p.Name),
		SectionName: ptr.To(gwv1.SectionName(p.SectionName)),
	}
}

// MadeFor reports whether route is one the operator made for a Listener
// (its managed-by label and a Listener as controller), and names it.
func MadeFor(route metav1.Object) (listener string, ok bool) {
	if route.GetLabels()[LabelManagedBy] != LabelManagedByValue {
		return "", false
	}
	owner := metav1.GetControllerOfNoCopy(route)
	if owner == nil || owner.Kind != "Listener" || owner.APIVersion != v1alpha1.GroupVersion.String() {
		return "", false
	}
	return owner.Name, true
}
