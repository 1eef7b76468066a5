package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkPodCreateThroughAPIServer creates pods of the shape a
// StatefulSet creates (a listener claim and a data claim) through the API
// server in four modes — no webhook configurations, our configurations
// calling a no-op handler, calling a handler that returns our patch as
// constant bytes without any lookup, and calling ours — 2,000 pods per mode
// from 50 clients (the API server saturated) and 2,000 from 5 (not), and
// logs one table: p50, p99, API server and webhook server CPU per create,
// what each mode adds to no webhook, and ours against the floors. Each
// iteration (-benchtime=5x: five) is one repeat of every mode, interleaved
// with the others; the ratios of ours to the floors are reported as the
// median and the spread of the repeats. Ours must make no live read while
// timed (its steady state: the listener claim cached, the data claim
// remembered), or the benchmark fails.
func BenchmarkPodCreateThroughAPIServer(b *testing.B) {
	e := testenv.Require(b, env)
	const pods, rounds = 2000, 4
	clientCounts := []int{50, 5}
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: measure the server
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	var template corev1.Pod
	if err := json.Unmarshal([]byte(strings.ReplaceAll(statefulSetPodJSON, "NS", ns)), &template); err != nil {
		b.Fatal(err)
	}
	// Without its StatefulSet, the garbage collector would delete each pod
	// soon after its create: work for the API server in every mode that
	// only adds noise.
	template.OwnerReferences = nil
	labelKey := names.PodSelectorLabel("listener-web-0")
	// The constant patch is ours for this pod once the cache holds its
	// claims, as it does in steady state.
	var patch []byte
	eventually(b, "claims in cache", func() error {
		if patch = ourPatch(b, ns, &template); patch == nil {
			return errorf("no patch yet")
		}
		return nil
	})
	modes := floorModes(pathTag(ns), patch)
	mut, val := webhookConfigurations(b, c)
	defer restoreConfigurations(b, c, mut, val)
	sameAsOurs(b, c, modes, &template, labelKey, mut, val)

	// CPU time is what the webhooks cost on a machine that is busy with
	// other work too, where latency mostly measures waiting for a core.
	apiserver := childProcess(b, "kube-apiserver")
	var repeats [][][]floorResult // iteration, client count, mode
	// The modes alternate in rounds, each round starting with the next
	// mode, so that none profits from running first (an emptier etcd) or
	// after a particular other mode.
	for b.Loop() {
		iteration := len(repeats)
		results := make([][]floorResult, len(clientCounts))
		for ci := range results {
			results[ci] = make([]floorResult, len(modes))
		}
		for r := range rounds {
			for ci, clients := range clientCounts {
				for k := range modes {
					mi := (k + r) % len(modes)
					switchMode(b, c, modes, modes[mi], mut, val, &template, labelKey)
					res := &results[ci][mi]
					a0, s0, g0 := processCPU(b, apiserver), processCPU(b, os.Getpid()), liveReads(b)
					res.lat = append(res.lat, createPods(b, c, &template, fmt.Sprintf("i%d-r%d-c%d-m%d", iteration, r, clients, mi), pods/rounds, clients)...)
					res.api += processCPU(b, apiserver) - a0
					res.self += processCPU(b, os.Getpid()) - s0
					res.reads += liveReads(b) - g0
				}
			}
		}
		for ci, clients := range clientCounts {
			if n := results[ci][3].reads; n > 0 {
				b.Fatalf("ours made %.0f live reads for %d creates from %d clients: not its steady state", n, pods, clients)
			}
		}
		repeats = append(repeats, results)
	}
	fmt.Print(floorTable(b, repeats, modes, clientCounts, pods, rounds, len(patch)))
}

// floorTable is the table of BenchmarkPodCreateThroughAPIServer: every
// repeat's creates together, per client count and mode, then the ratios of
// what ours adds to what each floor adds, as the median and the range of
// the repeats' (also reported as metrics).
func floorTable(b *testing.B, repeats [][][]floorResult, modes []admissionMode, clientCounts []int, pods, rounds, patchBytes int) string {
	var table strings.Builder
	n := len(repeats)
	fmt.Fprintf(&table, "\n%d repeats of %d pods per mode and client count, %d rounds each, %d-byte patch; load average at the end: %s\n", n, pods, rounds, patchBytes, loadAverage())
	table.WriteString("| clients | mode | p50 | p99 | API server CPU/create | webhook server CPU/create | added p50 | added p99 | added API CPU | live reads/create |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for ci, clients := range clientCounts {
		all := make([]floorResult, len(modes))
		for _, rep := range repeats {
			for mi := range modes {
				all[mi].lat = append(all[mi].lat, rep[ci][mi].lat...)
				all[mi].api += rep[ci][mi].api
				all[mi].self += rep[ci][mi].self
				all[mi].reads += rep[ci][mi].reads
			}
		}
		base := all[0].summary(pods * n)
		for mi, m := range modes {
			s := all[mi].summary(pods * n)
			fmt.Fprintf(&table, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.2f |\n", clients, m.name,
				ms(s.p50), ms(s.p99), ms(s.apiCPU), webhookCell(mi, s.selfCPU-base.selfCPU),
				ms(s.p50-base.p50), ms(s.p99-base.p99), ms(s.apiCPU-base.apiCPU), all[mi].reads/float64(pods*n))
		}
	}
	table.WriteString("\n| clients | ours added / floor added | p50: median (range) | p99 | API server CPU |\n|---|---|---|---|---|\n")
	for ci, clients := range clientCounts {
		for _, floor := range []struct {
			name string
			mode int
		}{{"constant patch", 2}, {"no-op", 1}} {
			var p50, p99, api []float64
			for _, rep := range repeats {
				base, ours, fl := rep[ci][0].summary(pods), rep[ci][3].summary(pods), rep[ci][floor.mode].summary(pods)
				ratio := func(f func(floorSummary) time.Duration) float64 {
					return float64(f(ours)-f(base)) / float64(f(fl)-f(base))
				}
				p50 = append(p50, ratio(func(s floorSummary) time.Duration { return s.p50 }))
				p99 = append(p99, ratio(func(s floorSummary) time.Duration { return s.p99 }))
				api = append(api, ratio(func(s floorSummary) time.Duration { return s.apiCPU }))
			}
			fmt.Fprintf(&table, "| %d | %s | %s | %s | %s |\n", clients, floor.name, spread(p50), spread(p99), spread(api))
			if floor.mode == 2 {
				b.ReportMetric(median(p50), fmt.Sprintf("added-p50-ours/const-%dc", clients))
				b.ReportMetric(median(p99), fmt.Sprintf("added-p99-ours/const-%dc", clients))
				b.ReportMetric(median(api), fmt.Sprintf("added-apicpu-ours/const-%dc", clients))
			}
		}
	}
	return table.String()
}

// median is the median of vs (the mean of the middle two of an even count).
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is "median (min–max)" of vs.
func spread(vs []float64) string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(vs), slices.Min(vs), slices.Max(vs))
}

// BenchmarkPodKinds says what a pod of each kind costs with our webhooks:
// whether the API server calls our pod webhook at all (its match
// conditions and object selectors decide), how large a patch it gets, and
// what creating 500 of them from 5 clients (in two rounds, alternating
// with no webhook) adds to p50 and to the API
// server's CPU, against no webhook configurations.
func BenchmarkPodKinds(b *testing.B) {
	e := testenv.Require(b, env)
	const pods, clients, rounds = 600, 5, 6
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	pinnedClaim(b, ns, "listener-web-0-pinned", "node-1")
	shared := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	if err := e.Client.Create(b.Context(), shared); err != nil {
		b.Fatal(err)
	}
	var replica corev1.Pod
	if err := json.Unmarshal([]byte(strings.ReplaceAll(statefulSetPodJSON, "NS", ns)), &replica); err != nil {
		b.Fatal(err)
	}
	replica.OwnerReferences = nil // as in BenchmarkPodCreateThroughAPIServer
	withVolumes := func(vs ...corev1.Volume) *corev1.Pod {
		p := replica.DeepCopy()
		delete(p.Labels, v1alpha1.LabelEnabled)
		p.Spec.Volumes = vs
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].VolumeMounts = nil
		}
		return p
	}
	pinned := replica.DeepCopy()
	pinned.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "listener-web-0-pinned"
	var newReplica corev1.Pod
	if err := json.Unmarshal([]byte(strings.ReplaceAll(replicaJSON(1), "NS", ns)), &newReplica); err != nil {
		b.Fatal(err)
	}
	newReplica.OwnerReferences = nil
	kinds := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"no claim, no listener volume", withVolumes(replica.Spec.Volumes[2])},
		{"a data claim only", withVolumes(replica.Spec.Volumes[1], replica.Spec.Volumes[2])},
		{"StatefulSet replica (per-replica Listener), StatefulSet created before this version", &replica},
		{"StatefulSet replica (per-replica Listener selecting the pod name)", &newReplica},
		{"shared Listener (ephemeral volume)", withVolumes(ephemeral("listener", map[string]string{v1alpha1.AnnotationListenerName: "shared"}), replica.Spec.Volumes[1])},
		{"pinned StatefulSet replica", pinned},
	}
	labelKey := names.PodSelectorLabel("listener-web-0")
	eventually(b, "claims and Listener in cache", func() error {
		var l v1alpha1.Listener
		if err := testLookup.cache.Get(b.Context(), client.ObjectKeyFromObject(shared), &l); err != nil {
			return err
		}
		if !strings.Contains(string(ourPatch(b, ns, pinned)), "node-1") {
			return errorf("no node affinity yet")
		}
		return nil
	})
	modes := []admissionMode{{name: "no webhook", off: true}, {name: "ours"}}
	mut, val := webhookConfigurations(b, c)
	defer restoreConfigurations(b, c, mut, val)
	apiserver := childProcess(b, "kube-apiserver")
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d pods per kind and mode, %d clients\n", pods, clients)
	table.WriteString("| pod | our webhook called | patch | live reads/create | p50 without → with | added API server CPU/create |\n|---|---|---|---|---|---|\n")
	iteration := 0
	for b.Loop() {
		iteration++
		// The kinds alternate in rounds, each round starting with the next
		// kind, so that none pays for a fuller etcd by coming last.
		res := make([][2]floorResult, len(kinds))
		for r := range rounds {
			for j := range kinds {
				ki := (j + r) % len(kinds)
				for mi, m := range modes {
					switchMode(b, c, modes, m, mut, val, &replica, labelKey)
					a0, g0 := processCPU(b, apiserver), liveReads(b)
					res[ki][mi].lat = append(res[ki][mi].lat, createPods(b, c, kinds[ki].pod, fmt.Sprintf("k%d-%d-r%d-m%d", iteration, ki, r, mi), pods/rounds, clients)...)
					res[ki][mi].api += processCPU(b, apiserver) - a0
					res[ki][mi].reads += liveReads(b) - g0
				}
			}
		}
		for ki, k := range kinds {
			res := res[ki]
			calls := webhookCalls(b, PathMutatePod)
			p := k.pod.DeepCopy()
			p.Name = "probe"
			if err := c.Create(b.Context(), p, client.DryRunAll); err != nil {
				b.Fatal(err)
			}
			called := webhookCalls(b, PathMutatePod) > calls
			patch := ourPatch(b, ns, k.pod)
			var ops []json.RawMessage
			if patch != nil {
				if err := json.Unmarshal(patch, &ops); err != nil {
					b.Fatal(err)
				}
			}
			off, on := res[0].summary(pods), res[1].summary(pods)
			fmt.Fprintf(&table, "| %s | %v | %d ops, %d bytes | %.2f | %s → %s | %s |\n", k.name, called, len(ops), len(patch), res[1].reads/pods, ms(off.p50), ms(on.p50), ms(on.apiCPU-off.apiCPU))
		}
	}
	fmt.Fprintf(&table, "load average at the end: %s\n", loadAverage())
	fmt.Print(table.String())
}

// loadAverage is the machine's 1, 5 and 15 minute load averages: how much
// other work shared the cores during a run.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// createPods creates n copies of pod named <phase>-<i> from clients
// goroutines and returns each create's latency.
func createPods(b *testing.B, c client.Client, pod *corev1.Pod, phase string, n, clients int) []time.Duration {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range clients {
		wg.Go(func() {
			for i := w; i < n; i += clients {
				p := pod.DeepCopy()
				p.Name = fmt.Sprintf("%s-%d", phase, i)
				start := time.Now()
				if err := c.Create(b.Context(), p); err != nil {
					failed.Add(1)
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%s: %d creates failed", phase, n)
	}
	return lat
}

// webhookCalls is how many requests the webhook server has answered on path.
func webhookCalls(b *testing.B, path string) float64 {
	return counter(b, "controller_runtime_webhook_requests_total", "webhook", path)
}

// liveReads is how many GET requests this process has sent to the API
// server: the handlers' reads that missed the cache (the benchmarks'
// clients only create).
func liveReads(b *testing.B) float64 {
	return counter(b, "rest_client_requests_total", "method", "GET")
}

// counter sums the Prometheus counter name over the series whose label is
// value.
func counter(b *testing.B, name, label, value string) float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// floorResult is what one mode measured at one client count.
type floorResult struct {
	lat       []time.Duration
	api, self time.Duration
	reads     float64 // GET requests to the API server from this process
}

// floorSummary is a floorResult per create.
type floorSummary struct {
	p50, p99, apiCPU, selfCPU, webhookCPU time.Duration
}

func (r floorResult) summary(creates int) floorSummary {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	return floorSummary{
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100],
		apiCPU: r.api / time.Duration(creates), selfCPU: r.self / time.Duration(creates),
	}
}

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// webhookCell is the webhook server's CPU per create; the test process is
// both the clients and the webhook server, so it is the process's CPU
// minus what it used without webhooks (mode 0).
func webhookCell(mode int, d time.Duration) string {
	if mode == 0 {
		return "–"
	}
	return ms(d)
}

// sameAsOurs checks that the constant-patch mode turns the pod into what
// ours does, so that the floor is the cost of exactly our mutation.
func sameAsOurs(b *testing.B, c client.Client, modes []admissionMode, pod *corev1.Pod, labelKey string, mut *admissionregistrationv1.MutatingWebhookConfiguration, val *admissionregistrationv1.ValidatingWebhookConfiguration) {
	got := map[string]string{}
	for _, m := range modes[2:] {
		switchMode(b, c, modes, m, mut, val, pod, labelKey)
		p := pod.DeepCopy()
		p.Name = "probe"
		if err := c.Create(b.Context(), p, client.DryRunAll); err != nil {
			b.Fatal(err)
		}
		out, err := json.Marshal(struct {
			L, A map[string]string
			S    corev1.PodSpec
		}{p.Labels, p.Annotations, p.Spec})
		if err != nil {
			b.Fatal(err)
		}
		got[m.name] = string(out)
	}
	if got["constant patch"] != got["ours"] {
		b.Fatalf("the constant patch does not make the pod ours does:\nconstant: %s\nours:     %s", got["constant patch"], got["ours"])
	}
}

// childProcess finds the pid of this process's child named name.
func childProcess(b *testing.B, name string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != name {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	b.Fatalf("no child process %s", name)
	return 0
}

// processCPU is the user+system CPU time pid has used so far.
func processCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the comm: state(0) ppid(1) ... utime(11) stime(12), in clock ticks.
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// BenchmarkScopeConditions measures what the fail-closed webhooks' scope
// costs the API server on the requests it keeps away from them: 1,000
// metadata updates of listener claims (the kind of update the PV
// controller, the scheduler and finalizer removal make), with the
// configurations registered (the match conditions are evaluated and are
// false: no webhook call) and without them. The difference per update is
// what the conditions cost.
func BenchmarkScopeConditions(b *testing.B) {
	e := testenv.Require(b, env)
	const updates, clients = 1000, 20
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := namespace(b, nil)
	for i := range clients {
		if err := c.Create(b.Context(), listenerClaim(ns, fmt.Sprintf("c%d", i), map[string]string{"listeners.stackable.tech/listener-class": "cluster-internal"}, ptr("listeners.stackable.tech"))); err != nil {
			b.Fatal(err)
		}
	}
	run := func(phase string) {
		var wg sync.WaitGroup
		for w := range clients {
			wg.Go(func() {
				for i := w; i < updates; i += clients {
					p := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touched":"%s-%d"}}}`, phase, i)
					pvc := &corev1.PersistentVolumeClaim{}
					pvc.Namespace, pvc.Name = ns, fmt.Sprintf("c%d", w)
					if err := c.Patch(b.Context(), pvc, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	var mut admissionregistrationv1.MutatingWebhookConfiguration
	var val admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(b.Context(), client.ObjectKey{Name: MutatingConfigurationName}, &mut); err != nil {
		b.Fatal(err)
	}
	if err := c.Get(b.Context(), client.ObjectKey{Name: ValidatingConfigurationName}, &val); err != nil {
		b.Fatal(err)
	}
	restore := func() {
		for _, o := range []client.Object{mut.DeepCopy(), val.DeepCopy()} {
			o.SetResourceVersion("")
			o.SetUID("")
			if err := c.Create(context.WithoutCancel(b.Context()), o); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Errorf("restore %s: %v", o.GetName(), err)
			}
		}
	}
	defer restore()
	apiserver := childProcess(b, "kube-apiserver")
	var off, on time.Duration
	for b.Loop() {
		for _, o := range []client.Object{mut.DeepCopy(), val.DeepCopy()} {
			if err := c.Delete(b.Context(), o); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second) // the API server's configuration watch catches up
		a0 := processCPU(b, apiserver)
		run(fmt.Sprintf("off%d", b.N))
		off += processCPU(b, apiserver) - a0
		restore()
		time.Sleep(2 * time.Second)
		a0 = processCPU(b, apiserver)
		run(fmt.Sprintf("on%d", b.N))
		on += processCPU(b, apiserver) - a0
	}
	b.ReportMetric(float64(off.Microseconds())/float64(updates*b.N), "apiserver-cpu-without-µs/update")
	b.ReportMetric(float64(on.Microseconds())/float64(updates*b.N), "apiserver-cpu-with-µs/update")
}
