package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/internal/ordinary"
)

// The ordinary objects look like the issue's: a claim of another class with
// kubectl's last-applied copy of about 1.8 KB (valid JSON), a Service that
// selects exactly one ordinary pod, in its namespace.
func TestMixObjects(t *testing.T) {
	c := ordinaryClaim(7)
	la := c.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
	if n := len(la); n < 1700 || n > 2000 {
		t.Errorf("last-applied annotation is %d bytes, want about 1800", n)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(la), &v); err != nil {
		t.Errorf("last-applied annotation is not JSON: %v", err)
	}
	if *c.Spec.StorageClassName == "listeners.stackable.tech" {
		t.Errorf("ordinary claim uses the listener class")
	}
	svc, pod := ordinaryService(42), ordinaryPod(42)
	if svc.Namespace != pod.Namespace {
		t.Errorf("service in %s, its pod in %s", svc.Namespace, pod.Namespace)
	}
	for k, want := range svc.Spec.Selector {
		if pod.Labels[k] != want {
			t.Errorf("service selects %s=%s, pod has %q", k, want, pod.Labels[k])
		}
	}
	if other := ordinaryPod(43); other.Labels[ordinary.LabelPod] == svc.Spec.Selector[ordinary.LabelPod] {
		t.Errorf("service selects more than one pod")
	}
	if svc.Labels["app.kubernetes.io/name"] == "listener" {
		t.Errorf("ordinary service carries the operator's label")
	}
}

// The mix report names each kind's slope and the burst against its floor.
func TestReportMix(t *testing.T) {
	rows := []row{
		{label: "base", components: []component{{name: "controller (leader)", rss: 50e6, heap: 20e6, live: 15e6}}},
		{label: "+ 1000 ordinary claims", added: 1000, kind: "ordinary claims", components: []component{{name: "controller (leader)", rss: 51e6, heap: 20.5e6, live: 15.2e6}}},
	}
	var b strings.Builder
	reportMix(&b, rows, phase{claims: 500, readyP50: time.Second, readyP99: 2 * time.Second},
		[]stage{{name: "Listener Ready", ds: []float64{1, 2, 4}}}, []float64{1, 2, 2}, []float64{2, 3, 8})
	out := b.String()
	for _, want := range []string{"ordinary claims", "RSS    1000 B", "heap     500 B", "objects     200 B", "Listener Ready (per-claim)", "floor: pod Ready", "p99 / floor p99 = 2.00", "bound-volume floor: pod Ready", "p99 / bound-volume floor p99 = 0.50"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestClaimSteps: the scheduler's and the PV controller's writes on a
// claim are read from its managedFields; a claim not bound yet has no
// bound time even if the controller wrote its status before.
func TestClaimSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(s int) *metav1.Time { v := metav1.NewTime(t0.Add(time.Duration(s) * time.Second)); return &v }
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(1)},
		{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(7)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(19)},
	}}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	sel, bound := claimSteps(c)
	if !sel.Equal(t0.Add(7*time.Second)) || !bound.Equal(t0.Add(19*time.Second)) {
		t.Errorf("selected %v, bound %v; want +7s, +19s", sel, bound)
	}
	c.Status.Phase = corev1.ClaimPending
	if _, bound := claimSteps(c); !bound.IsZero() {
		t.Errorf("a pending claim has a bound time: %v", bound)
	}
}

// TestReportPerClaim: the per-claim line is the growth from the base to
// the last row over the claims, and the budget what 64 MB leaves above the
// base.
func TestReportPerClaim(t *testing.T) {
	base := row{components: []component{{name: "controller (leader)", rss: 52e6, heap: 9e6, live: 7e6}}}
	last := row{components: []component{{name: "controller (leader)", rss: 68e6, heap: 21e6, live: 16e6}}}
	var b strings.Builder
	reportPerClaim(&b, options{listeners: 1000}, base, last)
	want := "controller (leader)        RSS   16000 B   heap   12000 B   objects    9000 B   budget   12000 B"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("got\n%s\nwant a line %q", b.String(), want)
	}
}
