//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The time-to-Ready part of BenchmarkTimeToAddress (issue 50): the same
// burst of listener pods on a class with the readiness gate against the
// ungated burst of the same run, and the operator's pods/status writes
// during each.

// benchGatedClass is cluster-internal (ClusterIP) with the readiness gate.
const benchGatedClass = "bench-gated"

// ensureGatedBenchClass creates benchGatedClass and waits until the pod
// webhook gives a pod of it the gate (a server-side dry run): a class the
// webhook does not know yet gets no gate, and the gated burst would
// measure ungated pods.
func ensureGatedBenchClass(b *testing.B, ctx context.Context) {
	b.Helper()
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP, PodReadiness: ptr.To(v1alpha1.PodReadinessGate),
	}}
	class.Name = benchGatedClass
	if err := k8s.client.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatalf("create ListenerClass %s: %v", benchGatedClass, err)
	}
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		p := addressPod("default", "bench-gate-probe", burstGated)
		if err := k8s.client.Create(ctx, p, client.DryRunAll); err != nil {
			last = err.Error()
			continue
		}
		for _, g := range p.Spec.ReadinessGates {
			if g.ConditionType == v1alpha1.PodConditionAddressesReady {
				return
			}
		}
		last = fmt.Sprintf("readiness gates %v", p.Spec.ReadinessGates)
	}
	b.Fatalf("a pod of class %s gets no readiness gate %s within a minute: %s", benchGatedClass, v1alpha1.PodConditionAddressesReady, last)
}

// writeCount is a count of writes the operator made, by result.
type writeCount struct{ success, failed float64 }

// burstCountingPodStatusWrites is burst, and the pod controller's
// pods/status writes from before the first pod is created until the
// burst's namespace is gone (listener_operator_writes_total of every
// operator pod, controller podlisteners (the pod controller's name, as a
// dashboard reads it), kind Pod, verb status).
func burstCountingPodStatusWrites(b *testing.B, ctx context.Context, n int, kind burstKind) (map[string][]time.Duration, writeCount) {
	b.Helper()
	before := podStatusWrites(b, ctx)
	d := burst(b, ctx, n, kind)
	after := podStatusWrites(b, ctx)
	return d, writeCount{after.success - before.success, after.failed - before.failed}
}

// podStatusWrites sums the pod controller's pods/status writes over the
// operator's pods (only the leader writes; a new leader's counter starts
// at 0, so a leader change during a burst loses the old one's part).
func podStatusWrites(b *testing.B, ctx context.Context) writeCount {
	b.Helper()
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
		b.Fatalf("list operator pods: %v", err)
	}
	var out writeCount
	for i := range pods.Items {
		text, err := metricsOf(ctx, &pods.Items[i])
		if err != nil {
			b.Fatalf("metrics of %s: %v", pods.Items[i].Name, err)
		}
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			line := sc.Text()
			labels, value, ok := strings.Cut(line, "} ")
			if !ok || !strings.HasPrefix(line, "listener_operator_writes_total{") ||
				!strings.Contains(labels, `controller="podlisteners"`) || !strings.Contains(labels, `kind="Pod"`) || !strings.Contains(labels, `verb="status"`) {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				continue
			}
			if strings.Contains(labels, `result="success"`) {
				out.success += v
			} else {
				out.failed += v
			}
		}
	}
	return out
}

// benchRuns are the bursts of one run of BenchmarkTimeToAddress.
type benchRuns struct {
	floor, bound, listener, gated map[string][]time.Duration
	listenerWrites, gatedWrites   writeCount
}

// report is the run's table and ratios; it reports the metrics and fails
// the benchmark when a burst did not complete.
func (r benchRuns) report(b *testing.B, n int) string {
	var out strings.Builder
	fmt.Fprintf(&out, "time to address and to Ready, burst of %d pods on the real nodes, from pod creation:\n", n)
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  stage\tn\tp50\tp99\tmax")
	rows := func(label string, d map[string][]time.Duration, stages []string) {
		for _, s := range stages {
			if v := d[s]; len(v) > 0 {
				fmt.Fprintf(tw, "  %s%s\t%d\t%s\t%s\t%s\n", label, s, len(v), pct(v, 50), pct(v, 99), pct(v, 100))
			}
		}
	}
	rows("(listener volume) ", r.listener, stageOrder)
	rows("gated class: ", r.gated, []string{stageListener, stageGateTrue, stageStarted, stageReady})
	rows("floor, no listener volume: ", r.floor, []string{stageScheduled, stageStarted, stageReady})
	rows("bound-volume floor (a volume Kubernetes binds): ", r.bound, []string{stageBound, stageScheduled, stageStarted})
	tw.Flush()
	fmt.Fprintf(&out, "  operator pods/status writes: ungated burst %.0f (%.0f failed), gated burst %.0f (%.0f failed), %.2f per gated pod\n",
		r.listenerWrites.success, r.listenerWrites.failed, r.gatedWrites.success, r.gatedWrites.failed, r.gatedWrites.success/float64(n))
	b.ReportMetric(r.gatedWrites.success/float64(n), "status-writes/gated-pod")
	if g := len(r.gated[stageGated]); g != n {
		b.Errorf("%d of %d pods of the gated burst carry the readiness gate", g, n)
	}
	l, f := r.listener[stageStarted], r.floor[stageStarted]
	if len(l) != n || len(f) != n {
		b.Errorf("%d of %d listener pods and %d of %d floor pods started", len(l), n, len(f), n)
		return out.String()
	}
	ratio := pct(l, 99).Seconds() / max(pct(f, 99).Seconds(), 0.001)
	fmt.Fprintf(&out, "  address readable p99 / floor p99 = %.2f\n", ratio)
	b.ReportMetric(pct(l, 99).Seconds(), "s-p99-address")
	b.ReportMetric(pct(f, 99).Seconds(), "s-p99-floor")
	b.ReportMetric(ratio, "p99-ratio")
	if bs := r.bound[stageStarted]; len(bs) == n {
		fmt.Fprintf(&out, "  address readable p99 / bound-volume floor p99 = %.2f\n", pct(l, 99).Seconds()/max(pct(bs, 99).Seconds(), 0.001))
		b.ReportMetric(pct(bs, 99).Seconds(), "s-p99-bound-floor")
	}
	if lr, gr := r.listener[stageReady], r.gated[stageReady]; len(lr) == n && len(gr) == n {
		fmt.Fprintf(&out, "  pod Ready p50 / p99, gated class: %s / %s, ungated: %s / %s (p99 gated / ungated = %.2f)\n",
			pct(gr, 50), pct(gr, 99), pct(lr, 50), pct(lr, 99), pct(gr, 99).Seconds()/max(pct(lr, 99).Seconds(), 0.001))
		b.ReportMetric(pct(lr, 99).Seconds(), "s-p99-ready")
		b.ReportMetric(pct(gr, 99).Seconds(), "s-p99-ready-gated")
	} else {
		b.Errorf("%d ungated and %d gated of %d listener pods Ready", len(lr), len(gr), n)
	}
	return out.String()
}
