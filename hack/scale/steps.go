package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/metricsscrape"
)

// The steps of a run (run, main.go), each measured at steady state.

// connect makes the harness's client, starts kwok and returns the measurer
// and what stops kwok.
func connect(ctx context.Context, o options) (*measurer, func(), error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 300, 600
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	_ = gwv1.Install(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		return nil, nil, err
	}
	stop, err := startKwok(ctx, o.kwok, o.stages, o.kubeconfig, o.workDir)
	if err != nil {
		return nil, nil, err
	}
	scraper, err := metricsscrape.ForServiceAccount(ctx, c, operatorNamespace, "listener-operator-scale")
	if err != nil {
		stop()
		return nil, nil, err
	}
	m := &measurer{c: c, cfg: cfg, scraper: scraper, profiles: o.profiles, liveHeap: o.liveHeap, wait: o.wait, batch: o.batch, settle: o.settle}
	return m, stop, nil
}

// prepare checks that the operator is deployed, turns its controllers'
// pprof endpoint on when asked, and makes the kwok nodes and the
// namespaces of the workloads.
func (m *measurer) prepare(ctx context.Context, o options) error {
	if err := m.baseline(ctx); err != nil {
		return err
	}
	if o.profiles != "" || o.liveHeap {
		if err := enableProfiles(ctx, m.c, o.profiles != "", o.profileRate); err != nil {
			return err
		}
	}
	say("creating %d kwok nodes", o.nodes)
	if err := createKwokNodes(ctx, m.c, o.nodes); err != nil {
		return err
	}
	if err := waitFor(ctx, 3*time.Minute, "kwok nodes Ready", func() (bool, string, error) {
		ready, err := readyKwokNodes(ctx, m.c)
		return ready == o.nodes, fmt.Sprintf("%d/%d", ready, o.nodes), err
	}); err != nil {
		return err
	}
	return ensureNamespaces(ctx, m.c)
}

// baseRow measures each component before any listener claim or ordinary
// object: the base every per-claim cost adds to. A resumed run has none
// (its objects are there already).
func (m *measurer) baseRow(ctx context.Context) (row, error) {
	resumed, err := anyListenerPods(ctx, m.c)
	if err != nil || resumed {
		return row{}, err
	}
	return m.measure(ctx, "no listener claims")
}

// anyListenerPods reports whether a listener workload of the harness
// exists already (a resumed run).
func anyListenerPods(ctx context.Context, c client.Client) (bool, error) {
	for i := range namespaces {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, &list, client.InNamespace(namespaceName(i)), client.MatchingLabels{v1alpha1.LabelListenerVolume: "true"}, client.Limit(1)); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// ordinaryPodSteps creates ordinary pods up to o.smallPods, then o.pods,
// and measures each size (claims listener claims exist by then).
func (m *measurer) ordinaryPodSteps(ctx context.Context, o options, claims int) ([]row, error) {
	var rows []row
	for _, size := range []int{o.smallPods, o.pods} {
		say("creating ordinary pods up to %d", size)
		start := time.Now()
		if _, err := createAll(ctx, m.c, m.ordinary, size, 32, func(i int) client.Object { return ordinaryPod(i) }); err != nil {
			return nil, err
		}
		m.ordinary = size
		if err := waitFor(ctx, o.wait, fmt.Sprintf("%d ordinary pods Running", size), func() (bool, string, error) {
			n, err := podsNotRunning(ctx, m.c)
			return n == 0, fmt.Sprintf("%d pending", n), err
		}); err != nil {
			return nil, err
		}
		say("%d pods created and Running in %s", size, time.Since(start).Round(time.Second))
		r, err := m.measure(ctx, fmt.Sprintf("%d pods, %d claims", size, claims))
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// lastPhase creates the last n of all listener workloads on the whole mix,
// breaks its per-claim workloads down stage by stage and measures.
func (m *measurer) lastPhase(ctx context.Context, n, all int) (phase, []stage, row, error) {
	large, err := m.listenerPhase(ctx, "large", n)
	if err != nil {
		return phase{}, nil, row{}, err
	}
	stages, err := m.stages(ctx, "large")
	if err != nil {
		return phase{}, nil, row{}, err
	}
	r, err := m.measure(ctx, fmt.Sprintf("+ %d listener claims (%d in all)", n, all))
	r.added, r.kind = n, "listener claims"
	return large, stages, r, err
}

// floors times n pods without a listener volume, then n with a volume the
// PV controller binds, each burst created at once (n < 0: as many as the
// last phase's claims; 0: none).
func (m *measurer) floors(ctx context.Context, n, last int) (floor, boundFloor []float64, err error) {
	if n < 0 {
		n = last
	}
	if n == 0 {
		return nil, nil, nil
	}
	if floor, err = m.floor(ctx, n); err != nil {
		return nil, nil, err
	}
	boundFloor, err = m.boundFloor(ctx, n)
	return floor, boundFloor, err
}
