package robustness

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// tcpClass says whether class makes TCPRoutes.
func tcpClass(class *v1alpha1.ListenerClass) bool {
	return class != nil && class.Spec.Gateway != nil && class.Spec.Gateway.EffectiveRouteKind() == v1alpha1.RouteKindTCPRoute
}

// parentRef is route parent p as a class's parentRef.
func parentRef(p gwv1.ParentReference) v1alpha1.GatewayParentRef {
	return v1alpha1.GatewayParentRef{Name: string(p.Name), Namespace: ptrString(p.Namespace), SectionName: ptrString(p.SectionName)}
}

// TCPRoutesFollowTheirClass: every TCPRoute the operator made is what its
// Listener's class allows: the class makes TCPRoutes; the route has one
// parent, a section of the class's block; one backend, the Listener's
// Service on one of its ports; the operator's labels alone and no
// annotation (nothing of the tenant's).
func TCPRoutesFollowTheirClass(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.TCPRoutes {
		for i := range s.TCPRoutes[t] {
			r := &s.TCPRoutes[t][i]
			l, class, where, breach := s.routeJudged(t, "TCPRoute", &r.ObjectMeta)
			if breach != "" {
				out = append(out, breach)
			}
			if class == nil {
				continue
			}
			if len(r.Spec.ParentRefs) != 1 || !slices.Contains(class.Spec.Gateway.ParentRefs, parentRef(r.Spec.ParentRefs[0])) {
				out = append(out, fmt.Sprintf("%s has parents %v, want one section of the class's block", where, r.Spec.ParentRefs))
			}
			var backends [][]gwv1.BackendRef
			for _, rule := range r.Spec.Rules {
				backends = append(backends, rule.BackendRefs)
			}
			out = append(out, routeBackend(where, backends, l)...)
			out = append(out, routeMetadata(where, r.Labels, r.Annotations, l)...)
		}
	}
	return out
}

// TCPSectionsPublishedOnce: no two Listeners are told one Gateway
// section: no two Listeners of TCPRoute classes, Ready for their spec,
// publish one address and port, and no two Listeners' TCPRoutes are both
// attached to one section.
func TCPSectionsPublishedOnce(st Step) []string {
	var out []string
	s := st.Cur
	told, attached := map[string]string{}, map[string]string{}
	once := func(seen map[string]string, key, who, what string) {
		if other, ok := seen[key]; ok && other != who {
			out = append(out, fmt.Sprintf("Listeners %s and %s both %s %s", other, who, what, key))
		}
		seen[key] = who
	}
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			if !tcpClass(s.classOf(l)) || !readyNow(l) {
				continue
			}
			for _, a := range l.Status.IngressAddresses {
				for _, p := range a.Ports {
					once(told, fmt.Sprintf("%s:%d", a.Address, p), l.Namespace+"/"+l.Name, "publish")
				}
			}
		}
		for i := range s.TCPRoutes[t] {
			r := &s.TCPRoutes[t][i]
			l := s.controller(t, r.OwnerReferences)
			if l == nil || r.DeletionTimestamp != nil {
				continue
			}
			for _, p := range r.Spec.ParentRefs {
				if gateway.TCPAttached(r, parentRef(p)).Attached {
					once(attached, gateway.SectionKey(parentRef(p)), l.Namespace+"/"+l.Name, "have a TCPRoute attached to section")
				}
			}
		}
	}
	return out
}

// ReplicasHoldTheirSections: a Listener of a TCPRoute class that is
// replica i of a StatefulSet (claims.Replica) with n ports, when Ready,
// routes its j-th port through entry i×n+j of the class's parentRefs; one
// whose entries lie past them is never Ready and says
// GatewaySectionsExhausted, and one whose entries are there does not say so.
func ReplicasHoldTheirSections(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			class := s.classOf(l)
			if !tcpClass(class) || l.DeletionTimestamp != nil || len(l.Spec.Ports) == 0 {
				continue
			}
			replica := claims.Replica(l, s.mounting(t, l))
			if replica < 0 {
				continue
			}
			n, size := len(l.Spec.Ports), len(class.Spec.Gateway.ParentRefs)
			who := fmt.Sprintf("Listener %s/%s, replica %d with %d port(s) of class %s (%d sections)", l.Namespace, l.Name, replica, n, class.Name, size)
			fits := (replica+1)*n <= size
			switch {
			case !fits && readyNow(l):
				out = append(out, who+" is Ready, and its entries lie past the class's parentRefs")
				continue
			case fits && says(l, v1alpha1.ReasonGatewaySectionsExhausted):
				out = append(out, who+" says GatewaySectionsExhausted, and its entries are there")
			}
			if !readyNow(l) || !fits {
				continue
			}
			for j, p := range l.Spec.Ports {
				want := class.Spec.Gateway.ParentRefs[replica*n+j]
				r := s.ownTCPRoute(t, l, p.Name)
				if r == nil || len(r.Spec.ParentRefs) != 1 || parentRef(r.Spec.ParentRefs[0]) != want {
					out = append(out, fmt.Sprintf("%s is Ready, and port %s is not routed (alone) through entry %d, section %s of Gateway %s", who, p.Name, replica*n+j, want.SectionName, want.Name))
				}
			}
		}
	}
	return out
}

// ownTCPRoute is Listener l's (tenant t) TCPRoute for port, or nil.
func (s *Snapshot) ownTCPRoute(t int, l *v1alpha1.Listener, port string) *gwv1.TCPRoute {
	for i := range s.TCPRoutes[t] {
		r := &s.TCPRoutes[t][i]
		if r.Name == names.RouteName(l.Name, port) && s.controller(t, r.OwnerReferences) == l {
			return r
		}
	}
	return nil
}

// mounting are the names of tenant t's pods that mount the claim Listener
// l is the own Listener of (none when it is no claim's).
func (s *Snapshot) mounting(t int, l *v1alpha1.Listener) []string {
	ref := metav1.GetControllerOf(l)
	if ref == nil || ref.Kind != "PersistentVolumeClaim" {
		return nil
	}
	var out []string
	for _, pod := range s.Pods[t] {
		if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == ref.Name ||
				v.Ephemeral != nil && pod.Name+"-"+v.Name == ref.Name
		}) {
			out = append(out, pod.Name)
		}
	}
	return out
}
