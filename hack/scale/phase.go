package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// phase is what creating a batch of listener workloads measured.
type phase struct {
	claims, listeners           int
	createP50, createP99        time.Duration // client-side pod create (API server + our webhook)
	webhookP50, webhookP99      float64       // the pod webhook's own latency, seconds
	readyP50, readyP99, readyMx time.Duration // Listener created → Ready
	leaderCPU                   float64       // CPU seconds the leader spent from the first create to the last Ready
}

// listenerPhase creates n listener workloads (pods with ephemeral listener
// volumes on fake nodes; half per-claim, half naming shared Listeners) and
// measures their admission and how long their Listeners take to be Ready.
func (m *measurer) listenerPhase(ctx context.Context, name string, n int) (phase, error) {
	shared := (n/2 + claimsPerShared - 1) / claimsPerShared
	say("phase %s: %d listener claims (%d per-claim, %d on %d shared Listeners)", name, n, (n+1)/2, n/2, shared)
	if _, err := createAll(ctx, m.c, 0, shared, 8, func(k int) client.Object { return sharedListener(name, k) }); err != nil {
		return phase{}, err
	}
	hBefore, err := m.webhookLatency(ctx)
	if err != nil {
		return phase{}, err
	}
	cpuBefore, err := m.leaderCPU(ctx)
	if err != nil {
		return phase{}, err
	}
	took, err := m.createListenerPods(ctx, name, n)
	if err != nil {
		return phase{}, err
	}
	want := (n+1)/2 + shared
	readies, err := m.listenersReady(ctx, name, want)
	if err != nil {
		return phase{}, err
	}
	hAfter, err := m.webhookLatency(ctx)
	if err != nil {
		return phase{}, err
	}
	cpuAfter, err := m.leaderCPU(ctx)
	if err != nil {
		return phase{}, err
	}
	ds := make([]float64, len(took))
	for i, d := range took {
		ds[i] = d.Seconds()
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return phase{
		claims: n, listeners: want,
		createP50: sec(percentile(ds, 0.5)), createP99: sec(percentile(ds, 0.99)),
		webhookP50: histogramQuantile(0.5, hBefore, hAfter), webhookP99: histogramQuantile(0.99, hBefore, hAfter),
		readyP50: sec(percentile(readies, 0.5)), readyP99: sec(percentile(readies, 0.99)), readyMx: sec(percentile(readies, 1)),
		leaderCPU: cpuAfter - cpuBefore,
	}, nil
}

// listenersReady waits until want Listeners of phase name are Ready and
// returns each one's time from creation to Ready, in seconds.
func (m *measurer) listenersReady(ctx context.Context, name string, want int) ([]float64, error) {
	var readies []float64
	err := waitFor(ctx, m.wait, fmt.Sprintf("%d Listeners of phase %s Ready", want, name), func() (bool, string, error) {
		readies = readies[:0]
		for i := range namespaces {
			var ls v1alpha1.ListenerList
			if err := m.c.List(ctx, &ls, client.InNamespace(namespaceName(i))); err != nil {
				return false, "", err
			}
			for _, l := range ls.Items {
				if !strings.Contains(l.Name, "-"+name+"-") {
					continue
				}
				c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
				if c != nil && c.Status == metav1.ConditionTrue {
					readies = append(readies, c.LastTransitionTime.Sub(l.CreationTimestamp.Time).Seconds())
				}
			}
		}
		return len(readies) >= want, fmt.Sprintf("%d/%d Ready", len(readies), want), nil
	})
	return readies, err
}

// createListenerPods creates the n listener pods of phase name, all at
// once or m.batch at a time: the next batch once all but a quarter of a
// batch of the pods before it run. Thousands of pods at once leave the
// scheduler retrying every pod whose claim is not bound yet, and on 2 cores
// that starves the binding itself (the 10x point); a cluster that grows
// does not get its workloads that way either. It returns each create's
// latency.
func (m *measurer) createListenerPods(ctx context.Context, name string, n int) ([]time.Duration, error) {
	pod := func(i int) client.Object { return listenerPod(name, i) }
	if m.batch <= 0 || m.batch >= n {
		return createAll(ctx, m.c, 0, n, 8, pod)
	}
	var took []time.Duration
	for from := 0; from < n; from += m.batch {
		to := min(from+m.batch, n)
		if err := waitFor(ctx, m.wait, fmt.Sprintf("the pods before listener pods %d-%d of phase %s Running", from, to-1, name), func() (bool, string, error) {
			p, err := podsNotRunning(ctx, m.c)
			return p <= m.batch/4, fmt.Sprintf("%d pending", p), err
		}); err != nil {
			return took, err
		}
		t, err := createAll(ctx, m.c, from, to, 8, pod)
		took = append(took, t...)
		if err != nil {
			return took, err
		}
		say("phase %s: %d/%d listener pods created", name, to, n)
	}
	return took, nil
}
