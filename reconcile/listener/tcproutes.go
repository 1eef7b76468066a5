package listener

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/listener-operator/listener-operator/api/gateway"
)

// TCPRoutes come in the version the cluster serves
// (gateway.TCPRouteVersion): v1, or v1alpha2 on clusters whose CRDs serve
// only that. Both have one JSON shape, so the operator reads either as v1
// (asTCPRoute) and writes the version it watches.

// IndexTCPRouteSection indexes TCPRoutes by the Gateway sections they name
// (gateway.RouteSections): who holds a section of a TCPRoute class.
const IndexTCPRouteSection = "tcproute.sections"

// tcpRouteSections are the values of IndexTCPRouteSection for a TCPRoute
// of either version.
func tcpRouteSections(o client.Object) []string {
	rt, err := asTCPRoute(o)
	if err != nil {
		return nil
	}
	return gateway.RouteSections(rt.Namespace, rt.Spec.ParentRefs)
}

// tcpRouteObject is an empty TCPRoute of version.
func tcpRouteObject(version string) client.Object {
	if version == gateway.TCPRouteV1alpha2 {
		return &gwv1alpha2.TCPRoute{}
	}
	return &gwv1.TCPRoute{}
}

// tcpRouteList is an empty list of TCPRoutes of version.
func tcpRouteList(version string) client.ObjectList {
	if version == gateway.TCPRouteV1alpha2 {
		return &gwv1alpha2.TCPRouteList{}
	}
	return &gwv1.TCPRouteList{}
}

// asTCPRoute is a TCPRoute of either version as v1.
func asTCPRoute(o runtime.Object) (*gwv1.TCPRoute, error) {
	if r, ok := o.(*gwv1.TCPRoute); ok {
		return r, nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	r := &gwv1.TCPRoute{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, r); err != nil {
		return nil, err
	}
	r.APIVersion = gwv1.GroupVersion.String()
	return r, nil
}

// tcpRouteItems are the routes of a list of either version, as v1.
func tcpRouteItems(list client.ObjectList) ([]gwv1.TCPRoute, error) {
	switch l := list.(type) {
	case *gwv1.TCPRouteList:
		return l.Items, nil
	case *gwv1alpha2.TCPRouteList:
		out := make([]gwv1.TCPRoute, len(l.Items))
		for i := range l.Items {
			r, err := asTCPRoute(&l.Items[i])
			if err != nil {
				return nil, err
			}
			out[i] = *r
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a TCPRoute list: %T", list)
}

// listTCPRoutes lists the TCPRoutes of the version the operator watches,
// as v1.
func (r *listenerReconciler) listTCPRoutes(ctx context.Context, opts ...client.ListOption) ([]gwv1.TCPRoute, error) {
	list := tcpRouteList(r.gatewayAPI.TCPVersion())
	if err := r.client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("list tcproutes: %w", err)
	}
	return tcpRouteItems(list)
}

// getTCPRoute reads TCPRoute key as v1 (nil when there is none).
func (r *listenerReconciler) getTCPRoute(ctx context.Context, key client.ObjectKey) (*gwv1.TCPRoute, error) {
	o := tcpRouteObject(r.gatewayAPI.TCPVersion())
	if err := r.client.Get(ctx, key, o); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return asTCPRoute(o)
}
