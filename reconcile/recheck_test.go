package reconcile

import (
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// A Listener that waits for endpoints or a load balancer looks again on its
// own; one that waits for the user (or is Ready) does not.
func TestAwaitsOthers(t *testing.T) {
	for _, tc := range []struct {
		v    verdict
		want bool
	}{
		{verdict{ready: true, reason: v1alpha1.ReasonReady}, false},
		{verdict{reason: v1alpha1.ReasonNoNodes}, true},
		{verdict{reason: v1alpha1.ReasonAwaitingLoadBalancer}, true},
		{verdict{reason: v1alpha1.ReasonClassNotFound}, false},
		{verdict{reason: v1alpha1.ReasonInvalid}, false},
		{verdict{reason: v1alpha1.ReasonForeignService}, false},
		{verdict{reason: v1alpha1.ReasonNoClass}, false},
	} {
		if got := awaitsOthers(tc.v); got != tc.want {
			t.Errorf("awaitsOthers(%s) = %v, want %v", tc.v.reason, got, tc.want)
		}
	}
}
