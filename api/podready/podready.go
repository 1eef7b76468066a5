// Package podready is the one rule for whether a pod's listener volumes are
// reachable at the addresses the pod was told: the condition behind the
// readiness gate v1alpha1.PodConditionAddressesReady (ListenerClass
// spec.podReadiness Gate). It takes values and returns a verdict; the pod
// controller gathers the values and writes the condition.
package podready

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Volume is what one listener volume of a pod needs to be judged.
type Volume struct {
	// Name is the pod's volume.
	Name string
	// Listener is the volume's Listener, nil when it does not exist.
	Listener *v1alpha1.Listener
	// Class is the Listener's class, nil when it names none or it is gone.
	Class *v1alpha1.ListenerClass
	// Now is what the pod is told now (addresses.ForPod), nil while that
	// waits.
	Now *v1alpha1.PodListener
	// Pending is why Now is nil (addresses.Wait's reason), "" when unknown.
	Pending string
	// Recorded is the volume's entry in the pod's PodListeners, nil when
	// there is none.
	Recorded *v1alpha1.PodListener
	// Certificate is the Listener's Certificate when the class asks for
	// one, nil when it does not exist.
	Certificate *Certificate
}

// Certificate is what the gate reads of a cert-manager Certificate.
type Certificate struct {
	// Ready is its Ready condition's status for its current generation.
	Ready bool
	// Names are its dnsNames and ipAddresses.
	Names []string
}

// Verdict is the condition's status, reason and message.
type Verdict struct {
	Ready           bool
	Reason, Message string
}

// Judge is the verdict on a pod's listener volumes: the first volume (in
// the order given) that is not reachable as told decides, with what is
// missing and what to do. Messages name only the pod's own namespace's
// objects.
func Judge(vols []Volume) Verdict {
	for _, v := range vols {
		if out, ok := judgeVolume(v); !ok {
			return out
		}
	}
	return Verdict{Ready: true, Reason: v1alpha1.ReasonAddressesReady, Message: "every listener volume is reachable at the addresses the pod was told"}
}

// Refused is the verdict on a pod whose PodListeners the operator could
// not write (refusal says why: a quota, an admission policy of the
// namespace): Judge's without what was recorded, whose message says what
// refused the write when that is what the pod lacks.
func Refused(vols []Volume, refusal string) Verdict {
	unrecorded := make([]Volume, len(vols))
	for i, v := range vols {
		v.Recorded = nil
		unrecorded[i] = v
	}
	out := Judge(unrecorded)
	if out.Reason == v1alpha1.ReasonAddressesNotRecorded {
		out.Message += fmt.Sprintf(": the API server refused the operator's write of it (%s); lift what refuses it, a ResourceQuota or an admission policy of this namespace", refusal)
	}
	return out
}

func judgeVolume(v Volume) (Verdict, bool) {
	if v.Listener == nil {
		return notReady(v1alpha1.ReasonListenerMissing, "volume %s: its Listener does not exist yet; it is made from the volume's claim, or create the Listener its claim names", v.Name)
	}
	name := v.Listener.Name
	ready := meta.FindStatusCondition(v.Listener.Status.Conditions, v1alpha1.ConditionReady)
	if !listenerReady(v, ready) {
		why := "has no Ready condition for its current spec yet"
		if ready != nil && ready.ObservedGeneration == v.Listener.Generation {
			why = fmt.Sprintf("is not Ready (reason %s)", ready.Reason)
		}
		return notReady(v1alpha1.ReasonListenerNotReady, "volume %s: Listener %s %s; see `kubectl describe listener %s`", v.Name, name, why, name)
	}
	if v.Now == nil {
		why := ""
		if v.Pending != "" {
			why = " (" + v.Pending + ")"
		}
		return notReady(v1alpha1.ReasonAddressesPending, "volume %s: the operator cannot tell the pod its addresses of Listener %s yet%s", v.Name, name, why)
	}
	if v.Recorded == nil || !sameAddresses(v.Recorded.IngressAddresses, v.Now.IngressAddresses) && len(v.Recorded.AddressesAtStart) == 0 {
		return notReady(v1alpha1.ReasonAddressesNotRecorded, "volume %s: the pod's PodListeners does not hold its addresses of Listener %s yet", v.Name, name)
	}
	if len(v.Recorded.AddressesAtStart) > 0 && !sameAddresses(v.Recorded.AddressesAtStart, v.Now.IngressAddresses) {
		return notReady(v1alpha1.ReasonAddressesChanged, "volume %s: the addresses the pod started with (%s) are no longer those of Listener %s (%s): restart the pod to advertise the new ones, or set the class's addressChange.restartPods",
			v.Name, list(v.Recorded.AddressesAtStart), name, list(v.Now.IngressAddresses))
	}
	return judgeClassPromises(v)
}

// listenerReady says whether the volume's Listener is Ready for its
// current spec, or lacks only a node to publish (NoNodes) while the pod is
// told its own node's address: a NodePort Listener that publishes only
// Ready pods' nodes (spec.publishNotReadyAddresses false) would otherwise
// wait for the very pods that wait for it.
func listenerReady(v Volume, ready *metav1.Condition) bool {
	if ready == nil || ready.ObservedGeneration != v.Listener.Generation {
		return false
	}
	return ready.Status == metav1.ConditionTrue ||
		ready.Reason == v1alpha1.ReasonNoNodes && v.Now != nil && v.Now.Scope == v1alpha1.PodListenerScopeNode
}

// judgeClassPromises checks what the class promises beyond an address:
// a published DNS name and a certificate that names the addresses.
func judgeClassPromises(v Volume) (Verdict, bool) {
	if v.Class == nil {
		return Verdict{}, true
	}
	name := v.Listener.Name
	if v.Class.Spec.Hostname != nil {
		c := meta.FindStatusCondition(v.Listener.Status.Conditions, v1alpha1.ConditionHostnamePublished)
		if c == nil || c.Status != metav1.ConditionTrue {
			reason := "not yet"
			if c != nil {
				reason = "reason " + c.Reason
			}
			return notReady(v1alpha1.ReasonHostnameNotPublished, "volume %s: the DNS name of Listener %s is not published (%s); see its HostnamePublished condition. Published means annotated for external-dns, not that DNS answers", v.Name, name, reason)
		}
	}
	if v.Class.Spec.Certificate == nil {
		return Verdict{}, true
	}
	if v.Certificate == nil || !v.Certificate.Ready {
		return notReady(v1alpha1.ReasonCertificateNotReady, "volume %s: the Certificate of Listener %s is missing or not Ready; see `kubectl describe certificate` in this namespace and the cert-manager issuer the class names", v.Name, name)
	}
	var missing []string
	for _, a := range v.Now.IngressAddresses {
		if !slices.Contains(v.Certificate.Names, a.Address) {
			missing = append(missing, a.Address)
		}
	}
	if len(missing) > 0 {
		return notReady(v1alpha1.ReasonCertificateStale, "volume %s: the Certificate of Listener %s does not name %s yet; cert-manager reissues it once the operator updated it", v.Name, name, strings.Join(missing, ", "))
	}
	return Verdict{}, true
}

func notReady(reason, format string, args ...any) (Verdict, bool) {
	return Verdict{Reason: reason, Message: fmt.Sprintf(format, args...)}, false
}

// sameAddresses compares two address lists as the pod reads them
// (address, type and ports; order included: the first is the one a pod
// advertises when it takes one).
func sameAddresses(a, b []v1alpha1.ListenerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.ListenerIngress) bool {
		if x.Address != y.Address || x.AddressType != y.AddressType || len(x.Ports) != len(y.Ports) {
			return false
		}
		for k, p := range x.Ports {
			if q, ok := y.Ports[k]; !ok || q != p {
				return false
			}
		}
		return true
	})
}

func list(addrs []v1alpha1.ListenerIngress) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Address
	}
	return strings.Join(out, ", ")
}
