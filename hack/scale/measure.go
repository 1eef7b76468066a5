package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/metricsscrape"
)

// measurer holds what the phases share.
type measurer struct {
	wait     time.Duration // for each phase's pods and Listeners
	settle   time.Duration // before each measurement, and its window
	batch    int           // listener pods created at a time; 0 = all at once
	c        client.Client
	cfg      *rest.Config
	scraper  *metricsscrape.Scraper // reads /metrics with a token
	ordinary int                    // ordinary pods created so far
	profiles string                 // where heap profiles go; "" = none
	liveHeap bool                   // force a collection before reading the heap
}

// component is one process measured: a pod of the operator.
type component struct {
	name     string // as in the table
	pod      string
	ip       string
	restarts int32
	rss      float64
	heap     float64 // go_memstats_heap_inuse_bytes: spans in use, their free room included
	live     float64 // go_memstats_heap_alloc_bytes: the objects in them (after -live-heap's collection, what is live)
	anon     float64 // resident anonymous memory (when the pod runs on this host)
	file     float64 // resident file-backed memory: the mapped binary
	split    bool    // anon and file are known
	requests float64 // rest_client_requests_total
	cpu      float64 // process_cpu_seconds_total
}

// row is one measurement at steady state.
type row struct {
	label      string
	added      int    // objects of kind added since the row before (mix rows)
	kind       string // what was added
	components []component
	reqPerSec  map[string]float64 // by component name
	cpuPerSec  map[string]float64 // CPU seconds per second, by component name
}

func (m *measurer) baseline(ctx context.Context) error {
	var pods corev1.PodList
	if err := m.c.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		return fmt.Errorf("is the operator deployed? %w", err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pods in namespace %s: deploy the operator first (hack/cluster/cluster.sh deploy)", operatorNamespace)
	}
	return nil
}

// components finds the operator's pods and scrapes each one's metrics
// (pod IPs of the real node answer from the host).
func (m *measurer) components(ctx context.Context) ([]component, error) {
	var pods corev1.PodList
	if err := m.c.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		return nil, err
	}
	leader := m.leader(ctx)
	var out []component
	nodePlugin := false
	for i := range pods.Items {
		p := &pods.Items[i]
		name := componentName(p, leader)
		if name == "" || (name == nodePluginName && nodePlugin) {
			continue
		}
		nodePlugin = nodePlugin || name == nodePluginName
		c, err := m.component(ctx, p, name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// nodePluginName names the CSI node plugin in the table (one of its pods,
// on the real node, is measured).
const nodePluginName = "csi node plugin"

// leader is the name of the controller replica that holds the leader
// lease ("" when none does or it cannot be read).
func (m *measurer) leader(ctx context.Context) string {
	var lease coordinationv1.Lease
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator.listeners.stackable.tech"}, &lease); err == nil && lease.Spec.HolderIdentity != nil {
		return strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
	}
	return ""
}

// componentName is how the table names the process of operator pod p, or
// "" when p is not measured: being deleted, without an IP, or one of the
// node plugin's copies on the fake nodes (its DaemonSet tolerates every
// taint, so kwok "runs" them: not processes).
func componentName(p *corev1.Pod, leader string) string {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" || strings.HasPrefix(p.Spec.NodeName, kwokNodeName(0)[:len("kwok-node-")]) {
		return ""
	}
	switch p.Labels["app.kubernetes.io/component"] {
	case "controller":
		if p.Name == leader {
			return "controller (leader)"
		}
		return "controller (non-leader)"
	case "csi-node":
		return nodePluginName
	case "csi-controller":
		return "csi controller"
	}
	return ""
}

// component scrapes pod p's metrics and reads its memory from /proc.
func (m *measurer) component(ctx context.Context, p *corev1.Pod, name string) (component, error) {
	s, err := scrape(ctx, m.scraper, p.Status.PodIP)
	if err != nil {
		return component{}, err
	}
	var restarts int32
	for _, cs := range p.Status.ContainerStatuses {
		restarts += cs.RestartCount
	}
	anon, file, split := residentSplit(string(p.UID))
	return component{
		anon: anon, file: file, split: split,
		name: name, pod: p.Name, ip: p.Status.PodIP, restarts: restarts,
		rss:      s.sum("process_resident_memory_bytes"),
		heap:     s.sum("go_memstats_heap_inuse_bytes"),
		live:     s.sum("go_memstats_heap_alloc_bytes"),
		requests: s.sum("rest_client_requests_total"),
		cpu:      s.sum("process_cpu_seconds_total"),
	}, nil
}

// steady waits settle, then measures each component and its API requests
// per second over the following settle.
func (m *measurer) steady(ctx context.Context, settle time.Duration) (row, error) {
	say("settling for %s, then measuring for %s", settle, settle)
	if err := sleep(ctx, settle); err != nil {
		return row{}, err
	}
	before, err := m.components(ctx)
	if err != nil {
		return row{}, err
	}
	start := time.Now()
	if err := sleep(ctx, settle); err != nil {
		return row{}, err
	}
	if m.liveHeap {
		if err := forceCollections(ctx, before); err != nil {
			return row{}, err
		}
	}
	after, err := m.components(ctx)
	if err != nil {
		return row{}, err
	}
	r := row{components: after, reqPerSec: map[string]float64{}, cpuPerSec: map[string]float64{}}
	for _, a := range after {
		for _, b := range before {
			if a.pod == b.pod {
				r.reqPerSec[a.name] = (a.requests - b.requests) / time.Since(start).Seconds()
				r.cpuPerSec[a.name] = (a.cpu - b.cpu) / time.Since(start).Seconds()
			}
		}
	}
	// As it is measured: a run that fails later keeps what it saw.
	for _, c := range after {
		say("  %-26s RSS %.1f MB, heap in use %.1f MB (objects %.1f MB), restarts %d", c.name, c.rss/1e6, c.heap/1e6, c.live/1e6, c.restarts)
	}
	return r, nil
}

// measure measures at steady state (steady), labels the row and saves its
// heap profiles when asked.
func (m *measurer) measure(ctx context.Context, label string) (row, error) {
	r, err := m.steady(ctx, m.settle)
	if err != nil {
		return row{}, err
	}
	r.label = label
	return r, m.profile(ctx, r)
}

// profile saves the controller replicas' heap profiles of a measurement,
// when profiles were asked for.
func (m *measurer) profile(ctx context.Context, r row) error {
	if m.profiles == "" {
		return nil
	}
	return saveHeapProfiles(ctx, r.components, m.profiles, r.label)
}

// webhookLatency sums the pod webhook's latency histogram over the
// controller replicas.
func (m *measurer) webhookLatency(ctx context.Context) (map[float64]float64, error) {
	var pods corev1.PodList
	if err := m.c.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
		return nil, err
	}
	total := map[float64]float64{}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		s, err := scrape(ctx, m.scraper, p.Status.PodIP)
		if err != nil {
			return nil, err
		}
		for le, v := range s.buckets("controller_runtime_webhook_latency_seconds", `webhook="/mutate-v1-pod"`) {
			total[le] += v
		}
	}
	return total, nil
}

// leaderCPU is the CPU seconds the leader replica has used so far. Right
// after a deploy the lease may still be held by a replica that is stopping
// (it keeps serving for its shutdown delay, then releases the lease): wait
// for a running replica to hold it.
func (m *measurer) leaderCPU(ctx context.Context) (float64, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		comps, err := m.components(ctx)
		if err != nil {
			return 0, err
		}
		for _, c := range comps {
			if c.name == "controller (leader)" {
				return c.cpu, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no running controller replica has held the leader lease for 2 minutes")
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
