package robustness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Coverage counts what the histories reached, so that a run that passes
// shows it did more than have its operations refused: operations accepted
// and refused by kind, and the states of Listeners and Services the
// invariants judged (a condition reason counts once per snapshot it is in).
type Coverage struct {
	Accepted, Refused map[Kind]int
	// States counts "<condition>=<reason>" and "Service <type>" over
	// every snapshot.
	States map[string]int
	// Refusals keeps a few refusal texts, one per kind; Messages one
	// condition message per state.
	Refusals map[Kind]string
	Messages map[string]string
}

// NewCoverage is an empty count.
func NewCoverage() *Coverage {
	return &Coverage{Accepted: map[Kind]int{}, Refused: map[Kind]int{}, States: map[string]int{}, Refusals: map[Kind]string{}, Messages: map[string]string{}}
}

// add counts one step (c nil: nothing).
func (c *Coverage) add(st Step) {
	if c == nil {
		return
	}
	if st.Answer.Err == "" {
		c.Accepted[st.Op.Kind]++
	} else {
		c.Refused[st.Op.Kind]++
		c.Refusals[st.Op.Kind] = st.Answer.Err
	}
	c.addPods(st)
	c.addGate(st)   // podgate.go
	c.addRoutes(st) // gatewayinvariants.go
	if len(st.Refused) > 0 {
		c.States["operator writes refused"] += len(st.Refused)
		c.Messages["operator writes refused"] = st.Refused[0].String()
	}
	for t := range st.Cur.Listeners {
		for _, l := range st.Cur.Listeners[t] {
			for _, cond := range l.Status.Conditions {
				if cond.Status != metav1.ConditionTrue || cond.Type != "TenantMetadataAllowed" {
					c.States[cond.Type+"="+cond.Reason]++
					c.Messages[cond.Type+"="+cond.Reason] = cond.Message
				}
			}
			if meta.IsStatusConditionTrue(l.Status.Conditions, "Ready") && len(l.Status.IngressAddresses) > 0 {
				c.States["addresses published"]++
			}
		}
		for _, svc := range st.Cur.Services[t] {
			c.States["Service "+string(svc.Spec.Type)]++
			if svc.Annotations[v1alpha1.AnnotationExternalDNSHostname] != "" {
				c.States["Service with a hostname"]++
			}
			if keyOf(&svc) != "" {
				c.States["Service with a sharing key"]++
			}
		}
	}
}

// Unplayed are the operation kinds never played (accepted or refused).
func (c *Coverage) Unplayed() []Kind {
	var out []Kind
	for _, k := range kinds(false) {
		if c.Accepted[k]+c.Refused[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// neverAccepted are the kinds played but always refused: a delete of
// something already gone, a create of something there. String says so.
func (c *Coverage) neverAccepted() []Kind {
	var out []Kind
	for _, k := range kinds(false) {
		if c.Accepted[k] == 0 && c.Refused[k] > 0 {
			out = append(out, k)
		}
	}
	return out
}

// String is the count, one line per kind of thing.
func (c *Coverage) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c.Accepted)) {
		fmt.Fprintf(&b, "accepted %s: %d\n", k, c.Accepted[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Refused)) {
		fmt.Fprintf(&b, "refused %s: %d (e.g. %.200s)\n", k, c.Refused[k], c.Refusals[k])
	}
	if never := c.neverAccepted(); len(never) > 0 {
		fmt.Fprintf(&b, "played but never accepted: %v\n", never)
	}
	for _, k := range slices.Sorted(maps.Keys(c.States)) {
		fmt.Fprintf(&b, "state %s: %d", k, c.States[k])
		if m := c.Messages[k]; m != "" {
			fmt.Fprintf(&b, " (e.g. %.160s)", m)
		}
		b.WriteString("\n")
	}
	return b.String()
}
