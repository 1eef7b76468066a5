package lbsharing

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

var rng = v1alpha1.LoadBalancerSharing{From: 9000, To: 9009}

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ask     Ask
		want    map[string]int32
		wantErr string
	}{
		{name: "replica 0", ask: Ask{Ports: []string{"a", "b"}, Replica: 0}, want: map[string]int32{"a": 9000, "b": 9001}},
		{name: "replica 2 of two ports", ask: Ask{Ports: []string{"a", "b"}, Replica: 2}, want: map[string]int32{"a": 9004, "b": 9005}},
		{name: "shared takes the last free block", ask: Ask{Ports: []string{"a", "b"}, Replica: -1}, want: map[string]int32{"a": 9008, "b": 9009}},
		{name: "shared skips a held block", ask: Ask{Ports: []string{"a", "b"}, Replica: -1, Held: map[int32]string{9009: "other"}}, want: map[string]int32{"a": 9006, "b": 9007}},
		{name: "replica beyond the range", ask: Ask{Ports: []string{"a", "b"}, Replica: 5}, wantErr: "replica 5 needs ports 9010-9011"},
		// Found by test/robustness (a range narrowed under a bootstrap):
		// a replica whose block does not fit is short of range, whoever
		// holds the part inside it; deleting the holder would not help.
		{name: "replica beyond the range, its first port held", ask: Ask{Ports: []string{"a", "b", "c"}, Replica: 3, Held: map[int32]string{9009: "kafka-bootstrap"}}, wantErr: "replica 3 needs ports 9009-9011"},
		{name: "replica's port held", ask: Ask{Ports: []string{"a"}, Replica: 1, Held: map[int32]string{9001: "kafka-bootstrap"}}, wantErr: "port 9001, which spec.loadBalancerSharing of ListenerClass c gives this Listener's port a, is held by Service kafka-bootstrap"},
		{name: "shared, range full", ask: Ask{Ports: []string{"a"}, Replica: -1, Held: held(9000, 9009)}, wantErr: "no room for this Listener: a Listener the StatefulSet's pods share needs a free block of 1, and 10 of its 10 ports are in use"},
		{name: "own ports stay", ask: Ask{Ports: []string{"a"}, Replica: -1, Own: map[string]int32{"a": 9003}}, want: map[string]int32{"a": 9003}},
		{name: "own port held by another asks anew", ask: Ask{Ports: []string{"a"}, Replica: 0, Own: map[string]int32{"a": 9003}, Held: map[int32]string{9003: "x"}}, want: map[string]int32{"a": 9000}},
		{name: "own port outside the range asks anew", ask: Ask{Ports: []string{"a"}, Replica: 0, Own: map[string]int32{"a": 80}}, want: map[string]int32{"a": 9000}},
		{name: "a new port asks anew", ask: Ask{Ports: []string{"a", "b"}, Replica: 0, Own: map[string]int32{"a": 9000}}, want: map[string]int32{"a": 9000, "b": 9001}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.ask
			a.Class, a.Range = "c", rng
			got, err := a.Assign()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				var ex *Exhausted
				var tk *Taken
				if !errors.As(err, &ex) && !errors.As(err, &tk) {
					t.Fatalf("error %T is neither *Exhausted nor *Taken", err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func held(from, to int32) map[int32]string {
	m := map[int32]string{}
	for p := from; p <= to; p++ {
		m[p] = "svc"
	}
	return m
}

func stsPod(name, sts string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelStatefulSetPodName: name}}}
}

func ptrTrue() *bool { b := true; return &b }

func TestWorkloadOf(t *testing.T) {
	claimOwned := []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "listener-kafka-2", Controller: ptrTrue()}}
	for _, tc := range []struct {
		name    string
		l       v1alpha1.Listener
		pods    []corev1.Pod
		want    Workload
		ok      bool
		wantErr string
	}{
		{name: "per-replica by pod name", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Annotations: map[string]string{v1alpha1.AnnotationStatefulSetPod: "kafka-2"}}},
			want: Workload{Namespace: "ns", StatefulSet: "kafka", Replica: 2}, ok: true},
		{name: "per-pod claim mounted by one pod", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: claimOwned}},
			pods: []corev1.Pod{stsPod("kafka-2", "kafka")}, want: Workload{Namespace: "ns", StatefulSet: "kafka", Replica: 2}, ok: true},
		{name: "shared by the StatefulSet's pods", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bootstrap"}},
			pods: []corev1.Pod{stsPod("kafka-0", "kafka"), stsPod("kafka-1", "kafka")}, want: Workload{Namespace: "ns", StatefulSet: "kafka", Replica: -1}, ok: true},
		{name: "shared, one pod yet", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bootstrap"}},
			pods: []corev1.Pod{stsPod("kafka-0", "kafka")}, want: Workload{Namespace: "ns", StatefulSet: "kafka", Replica: -1}, ok: true},
		{name: "no pod yet", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bootstrap"}}},
		{name: "a pod whose label is not its name", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}},
			pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Labels: map[string]string{v1alpha1.LabelStatefulSetPodName: "db-0"}}}}},
		{name: "a pod of no StatefulSet", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}}, pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}}},
		{name: "two StatefulSets", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}},
			pods: []corev1.Pod{stsPod("a-0", "a"), stsPod("b-0", "b")}, wantErr: "Listener l is mounted by pods of more than one workload (StatefulSets a, b)"},
		{name: "a StatefulSet and a loose pod", l: v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}},
			pods: []corev1.Pod{stsPod("a-0", "a"), {ObjectMeta: metav1.ObjectMeta{Name: "debug"}}}, wantErr: "(StatefulSets a; pods of no StatefulSet: debug)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok, err := WorkloadOf(&tc.l, tc.pods)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok || ok && w != tc.want {
				t.Fatalf("got %+v %v %v, want %+v %v", w, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestKeyOfNamespace(t *testing.T) {
	w := Workload{Namespace: "team-a", StatefulSet: "kafka"}
	if !KeyOfNamespace(w.Key(), "team-a") || KeyOfNamespace(w.Key(), "team") || KeyOfNamespace("team-b/kafka", "team-a") || KeyOfNamespace("team-a/", "team-a") || KeyOfNamespace("team-a/x/y", "team-a") {
		t.Fatal("KeyOfNamespace accepts a key of another namespace or a malformed one")
	}
}

// Apply is last: whatever the overrides put in the Service, it carries
// the key, the assigned ports and externalTrafficPolicy Cluster.
func TestApplyOverridesEverything(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "s", "namespace": "ns", "annotations": map[string]any{
			"metallb.io/allow-shared-ip": "tenant", "lbipam.cilium.io/sharing-cross-namespace": "*", "metallb.io/loadBalancerIPs": "192.0.2.9", "keep": "me"}},
		"spec": map[string]any{"externalTrafficPolicy": "Local", "ports": []any{
			map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)}}},
	}}
	if err := Apply(u, "ns/kafka", map[string]int32{"kafka": 9001}, nil); err != nil {
		t.Fatal(err)
	}
	ann := u.GetAnnotations()
	if _, ok := ann["metallb.io/loadBalancerIPs"]; ok {
		t.Fatal("an override's loadBalancerIPs kept")
	}
	if ann["metallb.io/allow-shared-ip"] != "ns/kafka" || ann["lbipam.cilium.io/sharing-key"] != "ns/kafka" || ann["keep"] != "me" {
		t.Fatalf("annotations %v", ann)
	}
	if _, ok := ann["lbipam.cilium.io/sharing-cross-namespace"]; ok {
		t.Fatal("sharing-cross-namespace kept")
	}
	ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
	p := ports[0].(map[string]any)
	if p["port"] != int64(9001) || p["targetPort"] != int64(9092) {
		t.Fatalf("port %v", p)
	}
	if etp, _, _ := unstructured.NestedString(u.Object, "spec", "externalTrafficPolicy"); etp != "Cluster" {
		t.Fatalf("externalTrafficPolicy %q", etp)
	}
	if err := Apply(u, "ns/kafka", map[string]int32{"kafka": 9001}, []string{"10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if ann := u.GetAnnotations(); ann["metallb.io/loadBalancerIPs"] != "10.0.0.1" || ann["lbipam.cilium.io/ips"] != "10.0.0.1" {
		t.Fatalf("the key's address is not asked for: %v", ann)
	}
	if err := Apply(u, "ns/kafka", map[string]int32{}, nil); err == nil {
		t.Fatal("a port without an assigned port was accepted")
	}
}

func TestShared(t *testing.T) {
	svc := func(name string, ips ...string) corev1.Service {
		s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		own      corev1.Service
		siblings []corev1.Service
		reason   string
	}{
		{"no address yet", svc("a"), []corev1.Service{svc("b", "10.0.0.1")}, v1alpha1.ReasonAwaitingSharedIP},
		{"first of its key", svc("a", "10.0.0.1"), nil, v1alpha1.ReasonShared},
		{"same IP", svc("a", "10.0.0.1"), []corev1.Service{svc("b", "10.0.0.1"), svc("c")}, v1alpha1.ReasonShared},
		{"another IP", svc("a", "10.0.0.2"), []corev1.Service{svc("b", "10.0.0.1")}, v1alpha1.ReasonSharingRefused},
		{"dual stack, same", svc("a", "fd00::1", "10.0.0.1"), []corev1.Service{svc("b", "10.0.0.1", "fd00::1")}, v1alpha1.ReasonShared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := Shared(&tc.own, "ns/k", tc.siblings); v.Reason != tc.reason || v.Shared != (tc.reason == v1alpha1.ReasonShared) {
				t.Fatalf("got %+v, want reason %s", v, tc.reason)
			}
		})
	}
}

// KeyAddress: the address most of the key's Services have (the oldest
// group's on a tie), which a Service made later asks for.
func TestKeyAddress(t *testing.T) {
	at := func(name string, min int, ips ...string) corev1.Service {
		s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Date(2026, 1, 1, 0, min, 0, 0, time.UTC)}}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		siblings []corev1.Service
		want     []string
	}{
		{"none yet", []corev1.Service{at("a", 0)}, nil},
		{"one", []corev1.Service{at("a", 0, "10.0.0.2"), at("b", 1)}, []string{"10.0.0.2"}},
		{"most", []corev1.Service{at("a", 0, "10.0.0.1"), at("b", 1, "10.0.0.2"), at("c", 2, "10.0.0.2")}, []string{"10.0.0.2"}},
		{"tie: the oldest", []corev1.Service{at("a", 3, "10.0.0.1"), at("b", 1, "10.0.0.2")}, []string{"10.0.0.2"}},
		{"dual stack", []corev1.Service{at("a", 0, "fd00::1", "10.0.0.1")}, []string{"10.0.0.1", "fd00::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := KeyAddress(tc.siblings); !slices.Equal(got, tc.want) {
				t.Errorf("KeyAddress = %v, want %v", got, tc.want)
			}
		})
	}
}
