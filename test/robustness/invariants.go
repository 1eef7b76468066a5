package robustness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// Step is what the invariants judge after one operation: the settled state
// before and after it, the operation and the API server's answer to it.
type Step struct {
	Prev, Cur *Snapshot
	Op        Op
	Answer    Answer
	// WebhooksOff: the webhooks were off (WebhooksOff) during the
	// operation; an invariant that rests on admission skips the step.
	WebhooksOff bool
	// Refused are the operator's writes the API server refused while it
	// settled (audit log, code 403, 422 or 5xx).
	Refused []testenv.Write
}

// Answer is what the API server told the actor of an operation.
type Answer struct {
	Err      string
	Warnings []string
}

// Invariant is one promise and the function that checks it; Check returns
// one line per breach.
type Invariant struct {
	Name  string
	Check func(Step) []string
}

// Invariants are every promise checked after each operation (the quiet
// window is checked by the runner, at the API server's audit log).
func Invariants() []Invariant {
	return []Invariant{
		{"ServicesFollowTheirClass", ServicesFollowTheirClass},
		{"HostnamesPublishedOnce", HostnamesPublishedOnce},
		{"NoOtherTenantNamed", NoOtherTenantNamed},
		{"TenantStaysInItsNamespace", TenantStaysInItsNamespace},
		{"NotReadySaysWhy", NotReadySaysWhy},
		{"PodsToldTheirAddresses", PodsToldTheirAddresses},
		{"GatedPodsReadyOnlyWhenReachable", GatedPodsReadyOnlyWhenReachable},
		{"RefusedWritesVisible", RefusedWritesVisible},
		{"ServicesValid", ServicesValid},
		{"RefusalsHealWhenLifted", RefusalsHealWhenLifted},
		{"RoutesFollowTheirClass", RoutesFollowTheirClass},
		{"RoutesPublishedOnce", RoutesPublishedOnce},
		{"GatewayRefusalsSaid", GatewayRefusalsSaid},
		{"TCPRoutesFollowTheirClass", TCPRoutesFollowTheirClass},
		{"TCPSectionsPublishedOnce", TCPSectionsPublishedOnce},
		{"ReplicasHoldTheirSections", ReplicasHoldTheirSections},
		{"TCPRefusalsSaid", TCPRefusalsSaid},
		{"TCPListenersToldGatewayAddress", TCPListenersToldGatewayAddress},
		{"SharingKeysStayInTheirNamespace", SharingKeysStayInTheirNamespace}, // shareinvariants.go
		{"SharedPortsApart", SharedPortsApart},
		{"ReplicasOnTheirPorts", ReplicasOnTheirPorts},
		{"SharedPortsShortSaid", SharedPortsShortSaid},
	}
}

// ServicesFollowTheirClass: every operator-made Service is what its
// Listener's class allows, and a Listener without ports has none: its type; exposure annotations and labels the
// class's own (its serviceAnnotations, its hostname), never a tenant's;
// keys off the class's allow-list absent (mode Enforce) or only where the
// Service carried them already (mode Warn never adds one); the Listener's
// ports; node ports inside the class's range unless the Listener says
// they are not (NodePortsInRange False). While the range is short for a
// Listener (Ready says so), its Service keeps back only what needs a new
// node port: a ClusterIP one stays ClusterIP, another lacks only new ports.
func ServicesFollowTheirClass(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Services {
		for i := range s.Services[t] {
			svc := &s.Services[t][i]
			l := s.owner(t, svc)
			if l == nil || svc.DeletionTimestamp != nil || l.DeletionTimestamp != nil {
				continue
			}
			class := s.classJudging(l)
			if class == nil {
				// A Listener whose class is gone, or one the webhooks
				// would have refused, keeps the Service its class last
				// made (it says so in Ready): docs/reconcile.md,
				// "Promises".
				continue
			}
			if says(l, v1alpha1.ReasonServiceRefused) {
				// The API server refused its Service's write (a quota):
				// it keeps the Service it had, and Ready says so
				// (RefusedWritesVisible).
				continue
			}
			where := fmt.Sprintf("Service %s/%s of Listener %s (class %s)", svc.Namespace, svc.Name, l.Name, class.Name)
			if len(l.Spec.Ports) == 0 {
				out = append(out, fmt.Sprintf("%s (type %s) stays, but the Listener has no ports: it has no Service", where, svc.Spec.Type))
				continue
			}
			if svc.Spec.Type != corev1.ServiceType(class.Spec.ServiceType) && !(rangeShort(l) && svc.Spec.Type == corev1.ServiceTypeClusterIP) {
				out = append(out, fmt.Sprintf("%s is of type %s, the class says %s", where, svc.Spec.Type, class.Spec.ServiceType))
			}
			out = append(out, exposureKeys(where, svc, l, class)...)
			out = append(out, tenantKeysAllowed(where, svc, st.Prev.serviceByUID(t, svc), class)...)
			out = append(out, portsFollow(where, svc, l, class)...)
			out = append(out, s.sharingFollows(where, t, svc, l, class)...) // shareinvariants.go
		}
	}
	return out
}

// exposureKeys: the exposure keys of svc are the class's.
func exposureKeys(where string, svc *corev1.Service, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(svc.Annotations)) {
		if !service.IsExposureAnnotation(k) || sharingOf(class) != nil && sharingAnnotation(k) {
			continue // a sharing class's key: sharingFollows
		}
		want, ok := class.Spec.ServiceAnnotations[k]
		if k == v1alpha1.AnnotationExternalDNSHostname {
			want, ok = hostname(class, l), class.Spec.Hostname != nil
		}
		if !ok || svc.Annotations[k] != want {
			out = append(out, fmt.Sprintf("%s has exposure annotation %s=%q, the class sets %q", where, k, svc.Annotations[k], want))
		}
	}
	for k, v := range class.Spec.ServiceAnnotations {
		if svc.Annotations[k] != v {
			out = append(out, fmt.Sprintf("%s has annotation %s=%q, the class sets %q", where, k, svc.Annotations[k], v))
		}
	}
	for k := range svc.Labels {
		if service.IsExposureLabel(k) {
			out = append(out, fmt.Sprintf("%s has exposure label %s, which the class does not set", where, k))
		}
	}
	return out
}

// hostname is the name class's template renders for l.
func hostname(class *v1alpha1.ListenerClass, l *v1alpha1.Listener) string {
	if class.Spec.Hostname == nil {
		return ""
	}
	return strings.NewReplacer("{listener}", l.Name, "{namespace}", l.Namespace).Replace(class.Spec.Hostname.Template)
}

// tenantKeysAllowed: a key under teamPrefix (allowed by classes with
// Allow) or offListPrefix (allowed by none) is on svc only when the class
// allows it, or, in mode Warn, when svc (prev, the same Service before the
// operation) carried it already.
func tenantKeysAllowed(where string, svc, prev *corev1.Service, class *v1alpha1.ListenerClass) []string {
	var out []string
	warn := class.Spec.EffectiveTenantMetadataMode() == v1alpha1.TenantMetadataWarn
	allowed := class.Spec.TenantMetadata != nil && len(class.Spec.TenantMetadata.Labels) > 0
	for kind, m := range map[string]map[string]string{"label": svc.Labels, "annotation": svc.Annotations} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			team, off := strings.HasPrefix(k, teamPrefix), strings.HasPrefix(k, offListPrefix)
			if !team && !off || team && allowed {
				continue
			}
			carried := false
			if prev != nil {
				_, carried = prev.Labels[k]
				if kind == "annotation" {
					_, carried = prev.Annotations[k]
				}
			}
			if warn && carried {
				continue
			}
			why := "the class (mode Enforce) does not allow it"
			if warn {
				why = "the class does not allow it and mode Warn never adds a key the Service did not carry"
			}
			out = append(out, fmt.Sprintf("%s has %s %s: %s", where, kind, k, why))
		}
	}
	return out
}

// portsFollow: svc has the Listener's ports (those it has node ports for,
// while the range is short), and node ports inside the class's range
// unless the Listener says otherwise.
func portsFollow(where string, svc *corev1.Service, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) []string {
	var out []string
	// A Listener whose sharing is held back keeps its Service as it was
	// (shareinvariants.go).
	if len(l.Spec.Ports) > 0 && !(sharingOf(class) != nil && sharingHeld(l)) {
		want, got := map[string]int32{}, map[string]int32{}
		for _, p := range l.Spec.Ports {
			want[p.Name] = p.Port
		}
		for _, p := range svc.Spec.Ports {
			got[p.Name] = p.Port
			if sharingOf(class) != nil {
				// A sharing class numbers the Service's ports by its
				// range; each forwards to the Listener's port.
				got[p.Name] = p.TargetPort.IntVal
			}
		}
		// A Listener its class's range is short for keeps back the ports
		// that need a new node port (service.WithinHeld), and no other.
		kept := rangeShort(l) && svc.Spec.Type != corev1.ServiceTypeClusterIP
		if kept {
			maps.DeleteFunc(want, func(name string, _ int32) bool { _, ok := got[name]; return !ok })
		}
		if !maps.Equal(want, got) {
			out = append(out, fmt.Sprintf("%s has ports %v, the Listener %v", where, got, want))
		}
	}
	r := class.Spec.NodePortRange
	if r == nil || class.Spec.ServiceType == v1alpha1.ServiceTypeClusterIP {
		return out
	}
	outside := meta.IsStatusConditionFalse(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange)
	for _, p := range svc.Spec.Ports {
		// A Listener its range is short for says in Ready which node
		// ports outside the range its Service keeps meanwhile.
		said := rangeShort(l) && strings.Contains(meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message, fmt.Sprintf("%s=%d", p.Name, p.NodePort))
		if p.NodePort != 0 && !r.Contains(p.NodePort) && !outside && !said {
			out = append(out, fmt.Sprintf("%s has node port %d (port %s) outside the class's range %s, and the Listener does not say so (NodePortsInRange, or Ready while the range is short)", where, p.NodePort, p.Name, r))
		}
	}
	return out
}

// rangeShort says whether l is not Ready because its class's node-port
// range, or its namespace's share of it, has no room.
func rangeShort(l *v1alpha1.Listener) bool {
	return says(l, v1alpha1.ReasonNodePortRangeExhausted) || says(l, v1alpha1.ReasonNodePortShareExceeded)
}

// says says whether l is not Ready for reason.
// classJudging is the class whose rules l's Service and routes follow:
// l's class, or nil when it is gone or is one the webhooks would have
// refused (admitted while they were off) and l says Invalid: the operator
// then leaves them as the last valid class made them, until the class is
// mended.
func (s *Snapshot) classJudging(l *v1alpha1.Listener) *v1alpha1.ListenerClass {
	class := s.classOf(l)
	if class != nil && len(validation.ListenerClass(class)) > 0 && says(l, v1alpha1.ReasonInvalid) {
		return nil
	}
	return class
}

func says(l *v1alpha1.Listener, reason string) bool {
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status != metav1.ConditionTrue && c.Reason == reason
}

// HostnamesPublishedOnce: no two Listeners publish one hostname of the
// world's domain, and no two Services carry one in their external-dns
// annotation.
func HostnamesPublishedOnce(st Step) []string {
	var out []string
	s := st.Cur
	published, annotated := map[string]string{}, map[string]string{}
	for t := range s.Listeners {
		for _, l := range s.Listeners[t] {
			for _, a := range l.Status.IngressAddresses {
				if a.AddressType != v1alpha1.AddressTypeHostname || !strings.HasSuffix(a.Address, s.World.Domain) {
					continue
				}
				who := l.Namespace + "/" + l.Name
				if other, ok := published[a.Address]; ok && other != who {
					out = append(out, fmt.Sprintf("Listeners %s and %s both publish %s", other, who, a.Address))
				}
				published[a.Address] = who
			}
		}
		for _, svc := range s.Services[t] {
			host := svc.Annotations[v1alpha1.AnnotationExternalDNSHostname]
			if host == "" {
				continue
			}
			who := svc.Namespace + "/" + svc.Name
			if other, ok := annotated[host]; ok {
				out = append(out, fmt.Sprintf("Services %s and %s both carry the external-dns name %s", other, who, host))
			}
			annotated[host] = who
		}
	}
	return out
}

// NoOtherTenantNamed: nothing a tenant reads (its Listeners' conditions
// and addresses, the events in its namespace, the answers and warnings to
// its operations) names the other tenant's namespace.
func NoOtherTenantNamed(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Listeners {
		other := s.World.Tenants[1-t]
		for _, l := range s.Listeners[t] {
			for _, c := range l.Status.Conditions {
				if strings.Contains(c.Message+c.Reason, other) {
					out = append(out, fmt.Sprintf("Listener %s/%s condition %s names namespace %s: %s", l.Namespace, l.Name, c.Type, other, c.Message))
				}
			}
			for _, a := range l.Status.IngressAddresses {
				if strings.Contains(a.Address, other) {
					out = append(out, fmt.Sprintf("Listener %s/%s publishes %s, of namespace %s", l.Namespace, l.Name, a.Address, other))
				}
			}
		}
		for _, ev := range s.Events[t] {
			if strings.Contains(ev.Note+ev.Reason, other) {
				out = append(out, fmt.Sprintf("event %s in %s names namespace %s: %s", ev.Reason, ev.Namespace, other, ev.Note))
			}
		}
	}
	if isTenantOp(st.Op.Kind) {
		other := s.World.Tenants[1-st.Op.Tenant]
		for _, text := range append([]string{st.Answer.Err}, st.Answer.Warnings...) {
			if strings.Contains(text, other) {
				out = append(out, fmt.Sprintf("the answer to tenant %d names namespace %s: %s", st.Op.Tenant, other, text))
			}
		}
	}
	return out
}

// NotReadySaysWhy: every Listener has a Ready condition; one that is not
// True, and every False condition, has a reason and a message.
func NotReadySaysWhy(st Step) []string {
	var out []string
	for t := range st.Cur.Listeners {
		for _, l := range st.Cur.Listeners[t] {
			if l.DeletionTimestamp != nil {
				continue
			}
			ready := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
			if ready == nil {
				out = append(out, fmt.Sprintf("Listener %s/%s has no Ready condition", l.Namespace, l.Name))
			}
			for _, c := range l.Status.Conditions {
				if c.Status != metav1.ConditionTrue && (c.Reason == "" || c.Message == "") {
					out = append(out, fmt.Sprintf("Listener %s/%s condition %s is %s without a reason and message (%q, %q)", l.Namespace, l.Name, c.Type, c.Status, c.Reason, c.Message))
				}
			}
		}
	}
	return out
}
