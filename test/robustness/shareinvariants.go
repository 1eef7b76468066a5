package robustness

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/lbsharing"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The promises of shared load balancers (docs/reconcile.md, "Shared load
// balancers"). ServicesFollowTheirClass judges a sharing class's Service
// too (sharingFollows: its key is its workload's, its ports forward to the
// Listener's and lie in the range, its traffic policy is Cluster).

// sharingOf is class's sharing range, nil when class is none or gives
// Services no shared IP.
func sharingOf(class *v1alpha1.ListenerClass) *v1alpha1.LoadBalancerSharing {
	if class == nil || class.Spec.ServiceType != v1alpha1.ServiceTypeLoadBalancer {
		return nil
	}
	return class.Spec.LoadBalancerSharing
}

// sharingHeld says whether l is not Ready for a reason after which its
// Service, if it has one, stays as it was (the range has no room, a port
// is taken, no workload mounts it yet or several do, the API server
// refused the write): the sharing promises do not judge that Service.
func sharingHeld(l *v1alpha1.Listener) bool {
	for _, r := range []string{v1alpha1.ReasonSharedPortsExhausted, v1alpha1.ReasonSharedPortTaken, v1alpha1.ReasonAwaitingWorkload, v1alpha1.ReasonInvalid, v1alpha1.ReasonServiceRefused} {
		if says(l, r) {
			return true
		}
	}
	return false
}

// keyOf is svc's sharing key ("" none).
func keyOf(svc *corev1.Service) string { return svc.Annotations[v1alpha1.AnnotationMetalLBSharedIP] }

// sharingAnnotation says whether k is an annotation the operator sets on a
// sharing class's Services (the key and the key's address), which
// exposureKeys then leaves to sharingFollows.
func sharingAnnotation(k string) bool {
	return k == v1alpha1.AnnotationMetalLBSharedIP || k == v1alpha1.AnnotationCiliumSharingKey ||
		k == lbsharing.AnnotationMetalLBIPs || k == lbsharing.AnnotationCiliumIPs
}

// workloadOfListener is the StatefulSet l's key must name, "" when the
// snapshot does not tell: the pod's StatefulSet of a Listener that selects
// one by name, else the one StatefulSet whose pods (of tenant t) mount
// l's claims.
func (s *Snapshot) workloadOfListener(t int, l *v1alpha1.Listener) string {
	if pod := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; pod != "" {
		return claims.StatefulSetOfPod(pod)
	}
	var mine []string
	for _, c := range s.Claims[t] {
		if _, listener := claims.Named(c.Annotations); listener == l.Name {
			mine = append(mine, c.Name)
		}
	}
	var sets []string
	for _, p := range s.Pods[t] {
		if p.DeletionTimestamp != nil || !slices.ContainsFunc(names.PodClaimNames(&p), func(c string) bool { return slices.Contains(mine, c) }) {
			continue
		}
		if sts := lbsharing.StatefulSetOf(&p); sts != "" && !slices.Contains(sets, sts) {
			sets = append(sets, sts)
		}
	}
	if len(sets) != 1 {
		return ""
	}
	return sets[0]
}

// sharingFollows: the Service of l (tenant t), of a sharing class, carries
// its workload's key on both annotations (never another namespace's or
// workload's, whatever a tenant wrote), the key's addresses only as both
// address annotations alike, externalTrafficPolicy Cluster, and ports
// that forward to the Listener's (portsFollow) inside the range.
func (s *Snapshot) sharingFollows(where string, t int, svc *corev1.Service, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) []string {
	rng := sharingOf(class)
	if rng == nil || sharingHeld(l) {
		return nil
	}
	var out []string
	key, cilium := keyOf(svc), svc.Annotations[v1alpha1.AnnotationCiliumSharingKey]
	want := s.World.Tenants[t] + "/" + s.workloadOfListener(t, l)
	switch {
	case key == "" || key != cilium:
		out = append(out, fmt.Sprintf("%s has sharing keys %s=%q and %s=%q: a sharing class's Service carries its workload's key on both", where, v1alpha1.AnnotationMetalLBSharedIP, key, v1alpha1.AnnotationCiliumSharingKey, cilium))
	case !lbsharing.KeyOfNamespace(key, svc.Namespace):
		out = append(out, fmt.Sprintf("%s has sharing key %q, not one of its namespace", where, key))
	case want != s.World.Tenants[t]+"/" && key != want:
		out = append(out, fmt.Sprintf("%s has sharing key %q, not its workload's %q", where, key, want))
	}
	if a, b := svc.Annotations[lbsharing.AnnotationMetalLBIPs], svc.Annotations[lbsharing.AnnotationCiliumIPs]; a != b {
		out = append(out, fmt.Sprintf("%s asks MetalLB for %q and Cilium for %q: both ask for the key's address", where, a, b))
	} else if a != "" && !s.keyHolds(t, key, a) {
		out = append(out, fmt.Sprintf("%s asks for %q, which no Service of its key %s has from the load balancer", where, a, key))
	}
	if p := svc.Spec.ExternalTrafficPolicy; p != "" && p != corev1.ServiceExternalTrafficPolicyCluster {
		out = append(out, fmt.Sprintf("%s has externalTrafficPolicy %s: a load balancer shares an IP only between Services of Cluster", where, p))
	}
	for _, p := range svc.Spec.Ports {
		if !rng.Contains(p.Port) {
			out = append(out, fmt.Sprintf("%s has port %d (%s) outside the class's sharing range %s, and the Listener does not say its range is short", where, p.Port, p.Name, rng))
		}
	}
	return out
}

// keyHolds says whether ips (comma-separated) are the load-balancer
// addresses of a Service of key in tenant t's namespace: the only address
// a Service of the key asks for.
func (s *Snapshot) keyHolds(t int, key, ips string) bool {
	for _, svc := range s.Services[t] {
		var have []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			have = append(have, in.IP)
		}
		if keyOf(&svc) == key && strings.Join(have, ",") == ips {
			return true
		}
	}
	return false
}

// operatorServices are tenant t's Services that a Listener controls, but
// those being deleted, each with its Listener.
func (s *Snapshot) operatorServices(t int, each func(svc *corev1.Service, l *v1alpha1.Listener)) {
	for i := range s.Services[t] {
		svc := &s.Services[t][i]
		if l := s.owner(t, svc); l != nil && svc.DeletionTimestamp == nil {
			each(svc, l)
		}
	}
}

// SharingKeysStayInTheirNamespace: every sharing key on an operator-made
// Service names the Service's own namespace (one tenant never joins
// another's IP, whatever it writes), on both load balancers' annotations
// alike, and none of the annotations that share across namespaces or
// under the old names is there.
func SharingKeysStayInTheirNamespace(st Step) []string {
	var out []string
	for t := range st.Cur.Services {
		st.Cur.operatorServices(t, func(svc *corev1.Service, _ *v1alpha1.Listener) {
			for _, k := range lbsharing.Annotations {
				v, ok := svc.Annotations[k]
				switch {
				case !ok || k == lbsharing.AnnotationMetalLBIPs || k == lbsharing.AnnotationCiliumIPs:
				case k != v1alpha1.AnnotationMetalLBSharedIP && k != v1alpha1.AnnotationCiliumSharingKey:
					out = append(out, fmt.Sprintf("Service %s/%s carries %s=%q, which the operator never sets", svc.Namespace, svc.Name, k, v))
				case !lbsharing.KeyOfNamespace(v, svc.Namespace):
					out = append(out, fmt.Sprintf("Service %s/%s carries sharing key %s=%q, not of its namespace: it would share another namespace's IP", svc.Namespace, svc.Name, k, v))
				}
			}
		})
	}
	return out
}

// SharedPortsApart: no two Services of one sharing key have a port in
// common (they would share one IP: the load balancer would refuse one).
func SharedPortsApart(st Step) []string {
	var out []string
	for t := range st.Cur.Services {
		holder := map[string]string{} // "<key> <port>" to the Service
		st.Cur.operatorServices(t, func(svc *corev1.Service, _ *v1alpha1.Listener) {
			key := keyOf(svc)
			if key == "" {
				return
			}
			for _, p := range svc.Spec.Ports {
				at := fmt.Sprintf("%s %d", key, p.Port)
				if other, ok := holder[at]; ok && other != svc.Name {
					out = append(out, fmt.Sprintf("Services %s and %s of sharing key %s both have port %d", other, svc.Name, key, p.Port))
				}
				holder[at] = svc.Name
			}
		})
	}
	return out
}

// ReplicasOnTheirPorts: the Service of replica i's Listener of a sharing
// class (the Listener of one StatefulSet pod, n ports) has the Service
// port from + i×n + j for its port j, unless it kept ports it had under
// the same key and port names before the operation (a port never moves)
// or the Listener says why not (sharingHeld).
func ReplicasOnTheirPorts(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Services {
		s.operatorServices(t, func(svc *corev1.Service, l *v1alpha1.Listener) {
			rng, i := sharingOf(s.classOf(l)), claims.Ordinal(l.Annotations[v1alpha1.AnnotationStatefulSetPod])
			if rng == nil || i < 0 || keyOf(svc) == "" || sharingHeld(l) || l.DeletionTimestamp != nil || kept(st.Prev.serviceByUID(t, svc), svc) {
				return
			}
			n := len(l.Spec.Ports)
			for j, lp := range l.Spec.Ports {
				want := rng.From + int32(i*n+j)
				for _, p := range svc.Spec.Ports {
					if p.Name == lp.Name && p.Port != want {
						out = append(out, fmt.Sprintf("Service %s/%s of replica %d (%d ports) has port %s=%d, the range %s gives it %d (from + replica×%d + %d)", svc.Namespace, svc.Name, i, n, lp.Name, p.Port, rng, want, n, j))
					}
				}
			}
		})
	}
	return out
}

// kept says whether svc kept what prev (the same Service before the
// operation, nil none) had: the same key, and each of its ports under the
// same name and number (a Listener that lost a port keeps the others).
func kept(prev, svc *corev1.Service) bool {
	if prev == nil || keyOf(prev) != keyOf(svc) {
		return false
	}
	for _, p := range svc.Spec.Ports {
		if !slices.ContainsFunc(prev.Spec.Ports, func(q corev1.ServicePort) bool { return q.Name == p.Name && q.Port == p.Port }) {
			return false
		}
	}
	return true
}

// SharedPortsShortSaid: a Listener of a sharing class whose Service
// carries no sharing key (or that has no Service) is not Ready, and says
// why (NotReadySaysWhy: a reason and message; NoOtherTenantNamed: naming
// no other namespace); replica i of n ports says SharedPortsExhausted
// exactly when from + (i+1)×n − 1 lies beyond the range (unless its
// Service kept ports inside it, or it says what the operator decides
// first: saysFirst).
func SharedPortsShortSaid(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Listeners {
		for i := range s.Listeners[t] {
			l := &s.Listeners[t][i]
			rng := sharingOf(s.classOf(l))
			if rng == nil || l.DeletionTimestamp != nil || len(l.Spec.Ports) == 0 {
				continue
			}
			who := fmt.Sprintf("Listener %s/%s (class %s, range %s)", l.Namespace, l.Name, *l.Spec.ClassName, rng)
			svc := s.service(t, names.ServiceName(l.Name))
			if (svc == nil || keyOf(svc) == "") && meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReady) {
				out = append(out, fmt.Sprintf("%s is Ready, but its Service carries no sharing key", who))
			}
			r := claims.Ordinal(l.Annotations[v1alpha1.AnnotationStatefulSetPod])
			if r < 0 {
				continue
			}
			n := len(l.Spec.Ports)
			beyond := int64(rng.From)+int64((r+1)*n)-1 > int64(rng.To)
			saidExhausted := says(l, v1alpha1.ReasonSharedPortsExhausted)
			switch {
			case saidExhausted && !beyond:
				out = append(out, fmt.Sprintf("%s says %s, but replica %d's %d ports fit: %s", who, v1alpha1.ReasonSharedPortsExhausted, r, n, readyMessage(l)))
			case beyond && !saidExhausted && !saysFirst(l) && !(svc != nil && keyOf(svc) != "" && inRange(svc, rng)):
				out = append(out, fmt.Sprintf("%s: replica %d's %d ports lie beyond the range, and Ready does not say %s (%s)", who, r, n, v1alpha1.ReasonSharedPortsExhausted, readyReason(l)))
			}
		}
	}
	return out
}

// saysFirst says whether l is not Ready for a reason the operator decides
// before the sharing range, or instead of it: its class or its pod
// selection Invalid (a replica's StatefulSet deleted, say), its class
// gone, its Service refused by the API server or another's.
func saysFirst(l *v1alpha1.Listener) bool {
	for _, r := range []string{v1alpha1.ReasonInvalid, v1alpha1.ReasonClassNotFound, v1alpha1.ReasonServiceRefused, v1alpha1.ReasonForeignService} {
		if says(l, r) {
			return true
		}
	}
	return false
}

func inRange(svc *corev1.Service, rng *v1alpha1.LoadBalancerSharing) bool {
	for _, p := range svc.Spec.Ports {
		if !rng.Contains(p.Port) {
			return false
		}
	}
	return true
}

func readyMessage(l *v1alpha1.Listener) string {
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

func readyReason(l *v1alpha1.Listener) string {
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		return c.Reason
	}
	return "Ready"
}
