package robustness

import (
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// RefusedWritesVisible: a write of a Listener's Service that the API
// server refused and the operator did not make good before it settled
// (Step.Refused) shows on that Listener: a condition that is not True, or
// a Warning event about it. Otherwise only the operator's log knows.
//
// A write of a claim's own Listener (the claim controller's: the ports of
// the pods that mount the claim) that was refused shows on that Listener
// as ClaimApplied False, reason WriteRefused.
func RefusedWritesVisible(st Step) []string {
	var out []string
	for _, x := range st.Refused {
		if x.Resource == "listeners" {
			out = append(out, claimWriteSaid(st.Cur, x)...)
		}
		if x.Resource != "services" {
			continue
		}
		for t, ns := range st.Cur.World.Tenants {
			if ns != x.Namespace {
				continue
			}
			for i := range st.Cur.Listeners[t] {
				l := &st.Cur.Listeners[t][i]
				if l.DeletionTimestamp != nil || names.ServiceName(l.Name) != x.Name && l.Status.ServiceName != x.Name {
					continue
				}
				if !saysSo(l, st.Cur.Events[t]) {
					out = append(out, fmt.Sprintf("the API server refused the operator's %s, and Listener %s/%s shows it nowhere (all its conditions True, no Warning event)", x, l.Namespace, l.Name))
				} else if x.Code == 403 {
					out = append(out, saysForbidden(l, st.Cur.Events[t], x)...)
				}
			}
		}
	}
	return out
}

// ServicesValid: the operator never builds a Service the API server
// cannot take: invalid (422), or one its server-side apply fails on (500:
// two ports of one merge key). What a tenant asks is checked before it
// reaches the Service, no webhook of this world judges Services, and the
// rest is the operator's own, so such a write it did not make good before
// it settled is its defect, however the Listener reports it
// (RefusedWritesVisible). Since a refused Service is tried again only
// every listener.ServiceRefusedRecheck, such a defect no longer shows as
// writes in the quiet window: the port_rebuild mutant stayed hidden
// until this was an invariant. 503 and 504 (the API server busy) are
// left out.
func ServicesValid(st Step) []string {
	var out []string
	for _, x := range st.Refused {
		if x.Resource == "services" && (x.Code == http.StatusUnprocessableEntity || x.Code == http.StatusInternalServerError) {
			out = append(out, fmt.Sprintf("the API server could not take the operator's %s, and the operator had not made it good when it settled", x))
		}
	}
	return out
}

// saysSo says whether Listener l has a condition that is not True or a
// Warning event about it among evs.
func saysSo(l *v1alpha1.Listener, evs []eventsv1.Event) bool {
	for _, c := range l.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			return true
		}
	}
	for _, ev := range evs {
		if ev.Type == corev1.EventTypeWarning && ev.Regarding.Kind == "Listener" && ev.Regarding.Name == l.Name && ev.Regarding.UID == l.UID {
			return true
		}
	}
	return false
}

// saysForbidden: a Service write the API server forbade (a quota, an
// admission policy: nothing the Listener can change) leaves l not Ready,
// for a reason that names the refusal, and a Warning event about it; one
// a quota forbade names the quota, so that the user knows what to raise.
func saysForbidden(l *v1alpha1.Listener, evs []eventsv1.Event, x testenv.Write) []string {
	who := fmt.Sprintf("the API server forbade the operator's %s, and Listener %s/%s", x, l.Namespace, l.Name)
	ready := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionTrue:
		return []string{who + " is Ready"}
	case ready.Reason != v1alpha1.ReasonServiceRefused:
		return []string{fmt.Sprintf("%s says %s (%s), not %s", who, ready.Reason, ready.Message, v1alpha1.ReasonServiceRefused)}
	case strings.Contains(ready.Message, "exceeded quota") && !strings.Contains(ready.Message, quotaName):
		return []string{fmt.Sprintf("%s does not name the quota %s: %s", who, quotaName, ready.Message)}
	}
	for _, ev := range evs {
		if ev.Type == corev1.EventTypeWarning && ev.Reason == v1alpha1.ReasonServiceRefused && ev.Regarding.UID == l.UID {
			return nil
		}
	}
	return []string{who + " has no Warning event " + v1alpha1.ReasonServiceRefused}
}

// claimWriteSaid: the refused write x of a claim's own Listener shows on
// that Listener as ClaimApplied False with reason WriteRefused (nothing
// when the Listener is gone).
func claimWriteSaid(s *Snapshot, x testenv.Write) []string {
	for t, ns := range s.World.Tenants {
		if ns != x.Namespace {
			continue
		}
		l := s.listener(t, x.Name)
		if l == nil || l.DeletionTimestamp != nil {
			return nil
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionClaimApplied)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonWriteRefused {
			return []string{fmt.Sprintf("the API server refused the operator's %s, and Listener %s/%s does not say so (ClaimApplied %v)", x, l.Namespace, l.Name, c)}
		}
	}
	return nil
}
