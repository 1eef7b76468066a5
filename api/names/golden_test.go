package names

import (
	"strings"
	"testing"
)

// TestHashedNamesGolden pins the names derived with a hash. They name every
// Listener's Service and the selector label on its pods in running
// clusters: a changed hash (or truncation rule) would rename them all on
// upgrade, deleting and recreating Services (new ClusterIPs and node ports)
// while every other test still passed.
func TestHashedNamesGolden(t *testing.T) {
	for _, tc := range []struct {
		listener, service, label string
	}{
		{"my.listener", "my-listener-376a02dd91", "listener.stackable.tech/mnt.my.listener"},
		{"0day", "l-0day-819d812d78", "listener.stackable.tech/mnt.0day"},
		{"Kafka_Broker", "kafka-broker-e817c3860e", "listener.stackable.tech/mnt.Kafka_Broker"},
		{strings.Repeat("a", 70), strings.Repeat("a", 52) + "-6bd5e50348", "listener.stackable.tech/mnt." + strings.Repeat("a", 48) + "-6bd5e50348"},
		{strings.Repeat("a", 71), strings.Repeat("a", 52) + "-eefa4cfbea", "listener.stackable.tech/mnt." + strings.Repeat("a", 48) + "-eefa4cfbea"},
		{strings.Repeat("x.", 120) + "y", strings.Repeat("x-", 26) + "5edbd8c613", "listener.stackable.tech/mnt." + strings.Repeat("x.", 23) + "x-5edbd8c613"},
	} {
		if got := ServiceName(tc.listener); got != tc.service {
			t.Errorf("ServiceName(%.20q…) = %q, want %q (a changed derived name renames Services on upgrade)", tc.listener, got, tc.service)
		}
		if got := PodSelectorLabel(tc.listener); got != tc.label {
			t.Errorf("PodSelectorLabel(%.20q…) = %q, want %q (a changed derived label unselects running pods on upgrade)", tc.listener, got, tc.label)
		}
	}
}

// TestRouteNamesGolden pins the route names and label values derived with a
// hash: a changed hash would rename every long Listener's routes on
// upgrade (deleted and made again, unrouted until the Gateway accepts
// them).
func TestRouteNamesGolden(t *testing.T) {
	if got, want := RouteName(strings.Repeat("a", 250), "tls"), strings.Repeat("a", 52)+"-c0f402b6ba"; got != want {
		t.Errorf("RouteName = %q, want %q", got, want)
	}
	if got, want := RouteName(strings.Repeat("x.", 120)+"y"+strings.Repeat("z", 20), "kafka"), strings.Repeat("x-", 26)+"4c5a9d8388"; got != want {
		t.Errorf("RouteName = %q, want %q", got, want)
	}
	if got, want := ListenerLabelValue(strings.Repeat("a", 70)), strings.Repeat("a", 52)+"-6bd5e50348"; got != want {
		t.Errorf("ListenerLabelValue = %q, want %q", got, want)
	}
	if got, want := ListenerLabelValue(strings.Repeat("x.", 120)+"y"), strings.Repeat("x.", 25)+"x-5edbd8c613"; got != want {
		t.Errorf("ListenerLabelValue = %q, want %q", got, want)
	}
}
