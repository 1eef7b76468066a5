package nodeports

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// heldBy are ports held by namespace ns.
func heldBy(ns string, ports ...int32) map[int32]string {
	m := map[int32]string{}
	for _, p := range ports {
		m[p] = ns
	}
	return m
}

// usedPorts are ports another namespace's Listeners hold.
func usedPorts(ports ...int32) map[int32]string { return heldBy("other", ports...) }

func share(from, to, n int32) v1alpha1.NodePortRange {
	return v1alpha1.NodePortRange{From: from, To: to, PerNamespace: &n}
}

func TestNodePorts(t *testing.T) {
	r := v1alpha1.NodePortRange{From: 31000, To: 31009}
	two := []string{"kafka", "metrics"}
	tests := []struct {
		name    string
		r       v1alpha1.NodePortRange
		ports   []string
		replica int
		used    map[int32]string
		want    map[string]int32
		wantErr string
	}{
		{"replica 0", r, two, 0, nil, map[string]int32{"kafka": 31000, "metrics": 31001}, ""},
		{"replica 2: from + 2n + j", r, two, 2, nil, map[string]int32{"kafka": 31004, "metrics": 31005}, ""},
		{"one port, replica 1", r, []string{"kafka"}, 1, nil, map[string]int32{"kafka": 31001}, ""},
		{"wanted port taken: the next free one", r, two, 1, usedPorts(31002), map[string]int32{"kafka": 31003, "metrics": 31004}, ""},
		{"replica beyond the range wraps to a free port", r, two, 7, usedPorts(31000), map[string]int32{"kafka": 31004, "metrics": 31005}, ""},
		{"no replica: the last block, clear of the replicas'", r, two, -1, nil, map[string]int32{"kafka": 31008, "metrics": 31009}, ""},
		{"no replica: last free block", r, two, -1, usedPorts(31000, 31003, 31009), map[string]int32{"kafka": 31006, "metrics": 31007}, ""},
		{"no replica: last free block of an uneven range", v1alpha1.NodePortRange{From: 31000, To: 31004}, two, -1, nil, map[string]int32{"kafka": 31002, "metrics": 31003}, ""},
		{"no replica, no whole block: the last free ports", v1alpha1.NodePortRange{From: 31000, To: 31003}, two, -1, usedPorts(31000, 31003), map[string]int32{"kafka": 31001, "metrics": 31002}, ""},
		{"no replica, no whole block: the last free ports, not replica 0's", r, two, -1, usedPorts(31001, 31003, 31005, 31007, 31009), map[string]int32{"kafka": 31006, "metrics": 31008}, ""},
		{"no ports", r, nil, 0, nil, nil, ""},
		{"exhausted", v1alpha1.NodePortRange{From: 31000, To: 31002}, two, 0, usedPorts(31000, 31002),
			nil, "node port range 31000-31002 of ListenerClass kafka-a is exhausted: 2 of its 3 ports are in use (0 of them by this namespace's Listeners) and this Listener needs 2; widen spec.nodePortRange"},
		{"exhausted, counting the namespace's own", v1alpha1.NodePortRange{From: 31000, To: 31002}, two, 0, map[int32]string{31000: "team-a", 31001: "other", 31005: "team-a"},
			nil, "2 of its 3 ports are in use (1 of them by this namespace's Listeners)"},
		{"within the share", share(31000, 31009, 4), two, -1, heldBy("team-a", 31000, 31001), map[string]int32{"kafka": 31008, "metrics": 31009}, ""},
		{"other namespaces' ports leave the share alone", share(31000, 31009, 2), two, -1, usedPorts(31000, 31001, 31008, 31009), map[string]int32{"kafka": 31006, "metrics": 31007}, ""},
		{"beyond the share", share(31000, 31009, 3), two, -1, heldBy("team-a", 31000, 31001),
			nil, "namespace team-a holds 2 of the 3 node ports of range 31000-31009 that ListenerClass kafka-a allows one namespace (spec.nodePortRange.perNamespace), and this Listener needs 2 more"},
		{"ports outside the range count for no share", share(31000, 31009, 2), two, -1, heldBy("team-a", 30000, 30001), map[string]int32{"kafka": 31008, "metrics": 31009}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Ask{Class: "kafka-a", Range: tt.r, Namespace: "team-a", Ports: tt.ports, Replica: tt.replica, Held: tt.used}
			got, err := a.NodePorts()
			if tt.wantErr != "" {
				var ex *Exhausted
				var sh *ShareExceeded
				if !errors.As(err, &ex) && !errors.As(err, &sh) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an *Exhausted or *ShareExceeded containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "other") {
					t.Errorf("err %q names another namespace", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NodePorts = %v, %v; want %v", got, err, tt.want)
			}
			for name, p := range got {
				if _, held := tt.used[p]; !tt.r.Contains(p) || held {
					t.Errorf("port %s got %d: outside the range or used", name, p)
				}
			}
		})
	}
}

// TestInRangeIsStable: the same replica asks for the same ports however
// often the cluster is rebuilt, and the replicas of one StatefulSet never
// ask for the same port.
func TestInRangeIsStable(t *testing.T) {
	r := v1alpha1.NodePortRange{From: 31000, To: 31099}
	ports := []string{"a", "b", "c"}
	seen := map[int32]int{}
	for i := range 33 {
		a := &Ask{Class: "c", Range: r, Namespace: "ns", Ports: ports, Replica: i}
		got, err := a.NodePorts()
		if err != nil {
			t.Fatal(err)
		}
		again, _ := a.NodePorts()
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("replica %d: %v then %v", i, got, again)
		}
		for _, p := range got {
			if prev, dup := seen[p]; dup {
				t.Fatalf("port %d for replicas %d and %d", p, prev, i)
			}
			seen[p] = i
		}
	}
}
