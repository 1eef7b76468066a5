package listener

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// The Gateway API is optional: a cluster without its CRDs runs the
// operator with no watch on them and no error. gatewayWatch looks every
// gatewayRecheck for the CRDs, and once both Gateway and TLSRoute are
// served starts the watches that reconcile a gateway class's Listeners
// when their routes' status or their Gateways change. Until then such
// Listeners are not Ready (GatewayAPIMissing) and look again every
// gatewayRecheck themselves.

// gatewayAPIState says whether the watches on the Gateway API run. Set
// once; never reset (CRDs removed later make the informers log errors,
// as for any watched kind).
type gatewayAPIState struct {
	watching atomic.Bool
	// tcpVersion is the TCPRoute version watched ("" before), once the
	// API server serves TCPRoute (gateway.TCPRouteVersion).
	tcpVersion atomic.Pointer[string]
}

// Watching reports whether the Gateway API's watches run, so that its
// objects can be read from the cache.
func (s *gatewayAPIState) Watching() bool { return s != nil && s.watching.Load() }

// TCPVersion is the TCPRoute version the operator watches and writes, ""
// while it watches none.
func (s *gatewayAPIState) TCPVersion() string {
	if s == nil || !s.Watching() {
		return ""
	}
	if v := s.tcpVersion.Load(); v != nil {
		return *v
	}
	return ""
}

// IndexRouteHostname indexes TLSRoutes by their hostnames: the hostname
// check counts routes the operator did not make.
const IndexRouteHostname = "spec.hostnames"

// gatewayWatch is the runnable that starts the Gateway API's watches.
type gatewayWatch struct {
	ctl    controller.Controller
	cache  cache.Cache
	mapper meta.RESTMapper
	client client.Reader
	state  *gatewayAPIState
	period time.Duration
}

// NeedLeaderElection: the watches serve the leader's controller.
func (w *gatewayWatch) NeedLeaderElection() bool { return true }

func (w *gatewayWatch) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("gateway-api")
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		if !w.state.watching.Load() && gateway.Served(w.mapper) {
			if err := w.watch(ctx); err != nil {
				log.Error(err, "start the Gateway API watches; trying again")
			} else {
				log.Info("the Gateway API is installed: watching Gateways and TLSRoutes")
				w.state.watching.Store(true)
			}
		}
		if v := gateway.TCPRouteVersion(w.mapper); w.state.watching.Load() && v != "" {
			if err := w.watchTCP(ctx, v); err != nil {
				log.Error(err, "start the TCPRoute watch; trying again")
			} else {
				log.Info("TCPRoute is served: watching TCPRoutes", "version", v)
				w.state.tcpVersion.Store(&v)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (w *gatewayWatch) watch(ctx context.Context) error {
	if err := w.cache.IndexField(ctx, &gwv1.TLSRoute{}, IndexRouteHostname, func(o client.Object) []string {
		return hostnames(o.(*gwv1.TLSRoute))
	}); err != nil {
		return err
	}
	c := w.client
	if err := w.ctl.Watch(source.Kind(w.cache, client.Object(&gwv1.TLSRoute{}), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		return listenersOfRoute(ctx, c, o.(*gwv1.TLSRoute))
	}))); err != nil {
		return err
	}
	return w.ctl.Watch(source.Kind(w.cache, client.Object(&gwv1.Gateway{}), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		return listenersOfGateway(ctx, c, o.GetNamespace(), o.GetName())
	})))
}

// watchTCP starts the watch on TCPRoutes of version, indexed by the
// sections they name.
func (w *gatewayWatch) watchTCP(ctx context.Context, version string) error {
	obj := tcpRouteObject(version)
	if err := w.cache.IndexField(ctx, obj, IndexTCPRouteSection, tcpRouteSections); err != nil {
		return err
	}
	c := w.client
	return w.ctl.Watch(source.Kind(w.cache, obj, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		rt, err := asTCPRoute(o)
		if err != nil {
			return nil
		}
		return listenersOfTCPRoute(ctx, c, rt)
	})))
}

// listenersOfTCPRoute maps a TCPRoute to the Listener it was made for (its
// status changed), to the Listener whose route has its name (one that is
// not its own going away frees the name, as for TLSRoutes) and to the
// Listeners of the classes whose sections it names: a route taking or
// freeing a section decides who may hold it.
func listenersOfTCPRoute(ctx context.Context, c client.Reader, rt *gwv1.TCPRoute) []ctrl.Request {
	reqs := listenersNamedBy(rt)
	keys := gateway.RouteSections(rt.Namespace, rt.Spec.ParentRefs)
	var classes v1alpha1.ListenerClassList
	if err := c.List(ctx, &classes); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list listener classes")
		return reqs
	}
	for i := range classes.Items {
		g := classes.Items[i].Spec.Gateway
		if g == nil || g.EffectiveRouteKind() != v1alpha1.RouteKindTCPRoute {
			continue
		}
		if slices.ContainsFunc(g.ParentRefs, func(p v1alpha1.GatewayParentRef) bool {
			whole := p
			whole.SectionName = ""
			return slices.Contains(keys, gateway.SectionKey(p)) || slices.Contains(keys, gateway.SectionKey(whole))
		}) {
			reqs = append(reqs, lookup.ListenersOfClass(ctx, c, classes.Items[i].Name)...)
		}
	}
	return reqs
}

// listenersOfRoute maps a route to the Listener it was made for (its
// status changed), to the Listener whose route has its name (<listener>.<port>,
// names.RouteName: a route of that name that is not its own, such as one
// named before route names were unique, going away frees the name) and to
// the Listeners that claim its names: a route of someone else's taking or
// freeing a name decides who publishes it.
func listenersOfRoute(ctx context.Context, c client.Reader, rt *gwv1.TLSRoute) []ctrl.Request {
	return append(listenersNamedBy(rt), claimantsOf(ctx, c, hostnames(rt))...)
}

// listenersNamedBy are the Listener a route was made for and the one
// whose route has its name (<listener>.<port>), of either route kind.
func listenersNamedBy(rt client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	if owner, ok := gateway.MadeFor(rt); ok {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: rt.GetNamespace(), Name: owner}})
	}
	if i := strings.LastIndexByte(rt.GetName(), '.'); i > 0 {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: rt.GetNamespace(), Name: rt.GetName()[:i]}})
	}
	return reqs
}

// listenersOfGateway maps a Gateway to the Listeners of the classes that
// route through it.
func listenersOfGateway(ctx context.Context, c client.Reader, namespace, name string) []ctrl.Request {
	var classes v1alpha1.ListenerClassList
	if err := c.List(ctx, &classes); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list listener classes")
		return nil
	}
	var reqs []ctrl.Request
	for i := range classes.Items {
		g := classes.Items[i].Spec.Gateway
		if g == nil {
			continue
		}
		for _, p := range g.ParentRefs {
			if p.Namespace == namespace && p.Name == name {
				reqs = append(reqs, lookup.ListenersOfClass(ctx, c, classes.Items[i].Name)...)
				break
			}
		}
	}
	return reqs
}

// routeClaimants are the Listeners whose routes carry host (they publish
// it: carries), and whether a route the operator did not make carries it:
// then no Listener may publish it, since the Gateway would send its
// clients to either backend.
func (r *listenerReconciler) routeClaimants(ctx context.Context, host string) (cs []claimant, foreign bool, err error) {
	if !r.gatewayAPI.Watching() {
		return nil, false, nil
	}
	var routes gwv1.TLSRouteList
	if err := r.client.List(ctx, &routes, client.MatchingFields{IndexRouteHostname: host}); err != nil {
		return nil, false, fmt.Errorf("list tlsroutes of hostname %s: %w", host, err)
	}
	for i := range routes.Items {
		rt := &routes.Items[i]
		owner, ok := gateway.MadeFor(rt)
		if !ok {
			return nil, true, nil
		}
		l, err := liveListener(ctx, r.client, client.ObjectKey{Namespace: rt.Namespace, Name: owner})
		if err != nil {
			return nil, false, err
		}
		if l != nil && metav1.IsControlledBy(rt, l) {
			cs = append(cs, claimant{key: client.ObjectKeyFromObject(l), created: l.CreationTimestamp, carries: true})
		}
	}
	return cs, false, nil
}
