package robustness

import (
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/listener"
)

// TestQuietWindowAllowsOneRecheckAPeriod: in a window, a Service a
// standing quota refuses may be written once a period
// (listener.ServiceRefusedRecheck) and once more; a loop of refused
// writes, a refused write where no quota stands, and any other write stay
// for QuietAfterSettling to report.
func TestQuietWindowAllowsOneRecheckAPeriod(t *testing.T) {
	refused := func(ns, name string) testenv.Write {
		return testenv.Write{Verb: "create", Resource: "services", Namespace: ns, Name: name, Code: 403}
	}
	c := &Cluster{quotas: map[string]bool{"held": true}}
	cases := []struct {
		name string
		ws   []testenv.Write
		span time.Duration
		want int
	}{
		{"one recheck in a short window", []testenv.Write{refused("held", "a")}, time.Second, 0},
		{"one recheck each of two Services", []testenv.Write{refused("held", "a"), refused("held", "b")}, time.Second, 0},
		{"a loop in a short window", []testenv.Write{refused("held", "a"), refused("held", "a"), refused("held", "a")}, time.Second, 2},
		{"two periods", []testenv.Write{refused("held", "a"), refused("held", "a"), refused("held", "a")}, 2 * listener.ServiceRefusedRecheck, 0},
		{"refused where no quota stands", []testenv.Write{refused("free", "a")}, time.Second, 1},
		{"a write that went through", []testenv.Write{{Verb: "patch", Resource: "services", Namespace: "held", Name: "a", Code: 200}}, time.Second, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.withoutRetries(tc.ws, tc.span); len(got) != tc.want {
				t.Errorf("left %v, want %d writes", got, tc.want)
			}
		})
	}
}
