package listener

import (
	"context"
	"fmt"
	"sort"

	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// A DNS name is published by one Listener only. A template that is not
// one-to-one (spec.hostname.allowAmbiguous, or stored before admission
// refused it), or two classes' templates, can give two Listeners one name;
// external-dns would then point it at whichever Service it read last. The
// first Listener publishes it: the one whose Service carries it already,
// else the oldest (creationTimestamp, then namespace/name). The others get
// HostnamePublished False (HostnameConflict) and keep their other
// addresses. Who else claims a name is found in the caches the reconciler
// has anyway: its own Services by their annotation (lookup.IndexServiceHostname),
// and, for each class with a template, the Listeners the template gives
// that name (addresses.ListenersNamed), each read by its key.

// hostnameClaim is the DNS name a Listener's class gives it and whether
// another Listener publishes it first.
type hostnameClaim struct {
	host  string // "" when the class gives none, or one that is not a DNS name
	taken bool   // another Listener publishes host (HostnameConflict)
	// route: a route the operator did not make has host (taken too).
	route bool
}

// serviceHostname is the name the Listener's Service carries in its
// external-dns annotation: none for a gateway class, whose name leads to
// the Gateway (its route carries it), not to the ClusterIP Service.
func serviceHostname(class *v1alpha1.ListenerClass, hc hostnameClaim) string {
	if class.Spec.Gateway != nil {
		return ""
	}
	return hc.published()
}

// published is the name the Listener publishes: its own, unless taken.
func (h hostnameClaim) published() string {
	if h.taken {
		return ""
	}
	return h.host
}

// claimant is a Listener that publishes, or may publish, a DNS name.
type claimant struct {
	key     types.NamespacedName
	created metav1.Time
	carries bool // its Service's external-dns annotation has the name
}

// hostnameClaimOf decides whether Listener l may publish the name its
// class gives it.
func (r *listenerReconciler) hostnameClaimOf(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) (hostnameClaim, error) {
	host := addresses.Hostname(&class.Spec, l.Name, l.Namespace)
	if host == "" {
		return hostnameClaim{}, nil
	}
	cs, err := hostnameClaimants(ctx, r.client, host)
	if err != nil {
		return hostnameClaim{}, err
	}
	routed, foreign, err := r.routeClaimants(ctx, host) // gatewayapi.go
	if err != nil || foreign {
		return hostnameClaim{host: host, taken: foreign, route: foreign}, err
	}
	cs = append(cs, routed...)
	// l claims the name whatever the cache shows of it (its Service may
	// not be made yet).
	me := client.ObjectKeyFromObject(l)
	found := false
	for _, c := range cs {
		found = found || c.key == me
	}
	if !found {
		cs = append(cs, claimant{key: me, created: l.CreationTimestamp})
	}
	return hostnameClaim{host: host, taken: !mutantNoHostnameConflict && firstClaimant(cs) != me}, nil
}

// firstClaimant is the Listener that publishes a name several claim: one
// whose Service carries it already, else the oldest; ties (creation times
// are in seconds) go to the first by namespace and name.
func firstClaimant(cs []claimant) types.NamespacedName {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		switch {
		case a.carries != b.carries:
			return a.carries
		case !a.created.Equal(&b.created):
			return a.created.Before(&b.created)
		case a.key.Namespace != b.key.Namespace:
			return a.key.Namespace < b.key.Namespace
		}
		return a.key.Name < b.key.Name
	})
	return cs[0].key
}

// hostnameClaimants are the Listeners, in any namespace and of any class,
// that publish host or may: those whose Service carries it, and those a
// class's template gives it that have a Service (one that has none yet,
// or never will, holds no name). Listeners being deleted hold none.
func hostnameClaimants(ctx context.Context, c client.Reader, host string) ([]claimant, error) {
	var cs []claimant
	seen := map[types.NamespacedName]bool{}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.MatchingFields{lookup.IndexServiceHostname: host}); err != nil {
		return nil, fmt.Errorf("list services publishing %s: %w", host, err)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		owner := lookup.ControlledByListener(s)
		if owner == "" {
			continue
		}
		l, err := liveListener(ctx, c, types.NamespacedName{Namespace: s.Namespace, Name: owner})
		if err != nil {
			return nil, err
		}
		if l == nil || !metav1.IsControlledBy(s, l) {
			continue // its Listener is gone: so is the Service, soon
		}
		key := client.ObjectKeyFromObject(l)
		seen[key] = true
		cs = append(cs, claimant{key: key, created: l.CreationTimestamp, carries: true})
	}
	var classes v1alpha1.ListenerClassList
	if err := c.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list listener classes: %w", err)
	}
	for i := range classes.Items {
		class := &classes.Items[i]
		if class.Spec.Hostname == nil {
			continue
		}
		for _, named := range addresses.ListenersNamed(class.Spec.Hostname, host) {
			ls, err := listenersOfClassNamed(ctx, c, class.Name, named)
			if err != nil {
				return nil, err
			}
			for _, l := range ls {
				key := client.ObjectKeyFromObject(l)
				if seen[key] {
					continue
				}
				served, err := hasService(ctx, c, l)
				if err != nil {
					return nil, err
				}
				if served {
					seen[key] = true
					cs = append(cs, claimant{key: key, created: l.CreationTimestamp})
				}
			}
		}
	}
	return cs, nil
}

// listenersOfClassNamed are the Listeners of class that named stands for:
// the one it names, read by its key, or, when it leaves the namespace or
// the name open (addresses.ListenersNamed), the class's Listeners that
// match. None being deleted.
func listenersOfClassNamed(ctx context.Context, c client.Reader, class string, named types.NamespacedName) ([]*v1alpha1.Listener, error) {
	ofClass := func(l *v1alpha1.Listener) bool { return l.Spec.ClassName != nil && *l.Spec.ClassName == class }
	if named.Namespace != "" && named.Name != "" {
		l, err := liveListener(ctx, c, named)
		if err != nil || l == nil || !ofClass(l) {
			return nil, err
		}
		return []*v1alpha1.Listener{l}, nil
	}
	var list v1alpha1.ListenerList
	if err := c.List(ctx, &list, client.MatchingFields{lookup.IndexListenerClass: class}); err != nil {
		return nil, fmt.Errorf("list listeners of class %s: %w", class, err)
	}
	var out []*v1alpha1.Listener
	for i := range list.Items {
		l := &list.Items[i]
		if (named.Namespace == "" || l.Namespace == named.Namespace) && (named.Name == "" || l.Name == named.Name) && l.DeletionTimestamp.IsZero() && ofClass(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// liveListener reads a Listener from the cache: nil when there is none, or
// it is being deleted.
func liveListener(ctx context.Context, c client.Reader, key types.NamespacedName) (*v1alpha1.Listener, error) {
	l := &v1alpha1.Listener{}
	switch err := c.Get(ctx, key, l); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get listener %s: %w", key, err)
	case !l.DeletionTimestamp.IsZero():
		return nil, nil
	}
	return l, nil
}

// hasService reports whether Listener l has its Service (status.serviceName).
func hasService(ctx context.Context, c client.Reader, l *v1alpha1.Listener) (bool, error) {
	if l.Status.ServiceName == "" {
		return false, nil
	}
	svc := &corev1.Service{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ServiceName}, svc); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get service %s/%s: %w", l.Namespace, l.Status.ServiceName, err)
	}
	return metav1.IsControlledBy(svc, l), nil
}

// listenersOfHostnames maps a Service to the Listeners that claim the names
// its external-dns annotation carries: when the Service drops a name or
// goes, the next Listener may publish it (the old and the new object of an
// update are both mapped).
func listenersOfHostnames(ctx context.Context, c client.Reader, svc client.Object) []ctrl.Request {
	return claimantsOf(ctx, c, lookup.HostnamesOf(svc))
}

// claimantsOf maps names to the Listeners that claim them.
func claimantsOf(ctx context.Context, c client.Reader, hosts []string) []ctrl.Request {
	var reqs []ctrl.Request
	for _, host := range hosts {
		cs, err := hostnameClaimants(ctx, c, host)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "find the listeners that claim a hostname", "hostname", host)
			continue
		}
		for _, cl := range cs {
			reqs = append(reqs, ctrl.Request{NamespacedName: cl.key})
		}
	}
	return reqs
}
