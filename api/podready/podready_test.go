package podready

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestJudge(t *testing.T) {
	addr := func(a string, port int32) []v1alpha1.ListenerIngress {
		return []v1alpha1.ListenerIngress{{Address: a, AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": port}}}
	}
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: gen}
	}
	listener := func(conds ...metav1.Condition) *v1alpha1.Listener {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "data-kafka-0", Generation: 2}}
		l.Status.Conditions = conds
		return l
	}
	readyL := listener(cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, 2))
	plain := &v1alpha1.ListenerClass{}
	named := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.example.test"}}}
	certified := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{Certificate: &v1alpha1.ListenerCertificate{}}}
	now := &v1alpha1.PodListener{IngressAddresses: addr("10.0.0.1", 30092)}
	vol := func(mod func(*Volume)) []Volume {
		v := Volume{Name: "listener", Listener: readyL, Class: plain, Now: now, Recorded: now}
		mod(&v)
		return []Volume{v}
	}
	for _, tc := range []struct {
		name, reason, message string
		vols                  []Volume
	}{
		{"no volume", v1alpha1.ReasonAddressesReady, "every listener volume", nil},
		{"reachable as told", v1alpha1.ReasonAddressesReady, "every listener volume", vol(func(*Volume) {})},
		{"Listener missing", v1alpha1.ReasonListenerMissing, "volume listener: its Listener does not exist yet", vol(func(v *Volume) { v.Listener = nil })},
		{"Listener not Ready", v1alpha1.ReasonListenerNotReady, "Listener data-kafka-0 is not Ready (reason AwaitingLoadBalancer)",
			vol(func(v *Volume) {
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAwaitingLoadBalancer, 2))
			})},
		{"Ready for an older spec", v1alpha1.ReasonListenerNotReady, "has no Ready condition for its current spec yet",
			vol(func(v *Volume) {
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, 1))
			})},
		{"NodePort Listener without a Ready pod's node: the pod's own node decides", v1alpha1.ReasonAddressesReady, "every listener volume",
			vol(func(v *Volume) {
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoNodes, 2))
				node := &v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeNode, IngressAddresses: now.IngressAddresses}
				v.Now, v.Recorded = node, node
			})},
		{"NoNodes for a cluster-scoped address still waits", v1alpha1.ReasonListenerNotReady, "is not Ready (reason NoNodes)",
			vol(func(v *Volume) {
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoNodes, 2))
			})},
		{"addresses pending", v1alpha1.ReasonAddressesPending, "cannot tell the pod its addresses of Listener data-kafka-0 yet", vol(func(v *Volume) { v.Now = nil })},
		{"addresses pending, and why", v1alpha1.ReasonAddressesPending, "cannot tell the pod its addresses of Listener data-kafka-0 yet (waiting for node n1 to report an address)",
			vol(func(v *Volume) { v.Now, v.Pending = nil, "waiting for node n1 to report an address" })},
		{"not recorded", v1alpha1.ReasonAddressesNotRecorded, "PodListeners does not hold", vol(func(v *Volume) { v.Recorded = nil })},
		{"recorded differs", v1alpha1.ReasonAddressesNotRecorded, "PodListeners does not hold",
			vol(func(v *Volume) { v.Recorded = &v1alpha1.PodListener{IngressAddresses: addr("10.0.0.1", 30093)} })},
		{"changed since start", v1alpha1.ReasonAddressesChanged, "started with (10.0.0.9) are no longer those of Listener data-kafka-0 (10.0.0.1): restart the pod",
			vol(func(v *Volume) {
				v.Recorded = &v1alpha1.PodListener{IngressAddresses: now.IngressAddresses, AddressesAtStart: addr("10.0.0.9", 30092)}
			})},
		{"start kept and current", v1alpha1.ReasonAddressesReady, "every listener volume",
			vol(func(v *Volume) {
				v.Recorded = &v1alpha1.PodListener{IngressAddresses: addr("10.0.0.9", 30092), AddressesAtStart: now.IngressAddresses}
			})},
		{"hostname not published", v1alpha1.ReasonHostnameNotPublished, "not published (reason HostnameConflict)",
			vol(func(v *Volume) {
				v.Class = named
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, 2),
					cond(v1alpha1.ConditionHostnamePublished, metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, 2))
			})},
		{"hostname published", v1alpha1.ReasonAddressesReady, "every listener volume",
			vol(func(v *Volume) {
				v.Class = named
				v.Listener = listener(cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, 2),
					cond(v1alpha1.ConditionHostnamePublished, metav1.ConditionTrue, v1alpha1.ReasonHostnamePublished, 2))
			})},
		{"certificate missing", v1alpha1.ReasonCertificateNotReady, "missing or not Ready", vol(func(v *Volume) { v.Class = certified })},
		{"certificate not Ready", v1alpha1.ReasonCertificateNotReady, "missing or not Ready",
			vol(func(v *Volume) { v.Class, v.Certificate = certified, &Certificate{Names: []string{"10.0.0.1"}} })},
		{"certificate stale", v1alpha1.ReasonCertificateStale, "does not name 10.0.0.1 yet",
			vol(func(v *Volume) {
				v.Class, v.Certificate = certified, &Certificate{Ready: true, Names: []string{"10.0.0.2"}}
			})},
		{"certificate names the address", v1alpha1.ReasonAddressesReady, "every listener volume",
			vol(func(v *Volume) {
				v.Class, v.Certificate = certified, &Certificate{Ready: true, Names: []string{"10.0.0.1"}}
			})},
		{"class gone: the address decides", v1alpha1.ReasonAddressesReady, "every listener volume", vol(func(v *Volume) { v.Class = nil })},
		{"the first volume not reachable decides", v1alpha1.ReasonListenerMissing, "volume b:",
			append(vol(func(*Volume) {}), Volume{Name: "b"}, Volume{Name: "c", Listener: readyL})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.vols)
			if got.Reason != tc.reason || got.Ready != (tc.reason == v1alpha1.ReasonAddressesReady) || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Judge = %+v, want reason %s with %q", got, tc.reason, tc.message)
			}
		})
	}
}

// TestRefused: a refused PodListeners write is what the pod lacks once its
// Listener is Ready, and the message says what refused it; before that the
// Listener decides.
func TestRefused(t *testing.T) {
	ready := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}}
	ready.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, ObservedGeneration: 1}}
	now := &v1alpha1.PodListener{IngressAddresses: []v1alpha1.ListenerIngress{{Address: "10.0.0.1"}}}
	for _, tc := range []struct {
		name, reason, message string
		vol                   Volume
	}{
		{"recorded before, refused now", v1alpha1.ReasonAddressesNotRecorded,
			"volume listener: the pod's PodListeners does not hold its addresses of Listener web yet: the API server refused the operator's write of it (exceeded quota: q); lift what refuses it",
			Volume{Name: "listener", Listener: ready, Now: now, Recorded: now}},
		{"Listener missing first", v1alpha1.ReasonListenerMissing, "its Listener does not exist yet; it is made from the volume's claim, or create the Listener its claim names",
			Volume{Name: "listener"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vols := []Volume{tc.vol}
			got := Refused(vols, "exceeded quota: q")
			if got.Ready || got.Reason != tc.reason || !strings.HasSuffix(got.Message, tc.message) && !strings.Contains(got.Message, tc.message) {
				t.Errorf("Refused = %+v, want reason %s and message %q", got, tc.reason, tc.message)
			}
			if vols[0].Recorded != tc.vol.Recorded {
				t.Error("Refused changed the volumes it was given")
			}
		})
	}
}
