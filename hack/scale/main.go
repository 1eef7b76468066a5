package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/metricsscrape"
	"github.com/listener-operator/listener-operator/internal/ordinary"
)

const operatorNamespace = "listener-operator"

// options are the harness's flags.
type options struct {
	kubeconfig, kwok, stages, out, workDir string
	profiles                               string // directory for heap profiles; "" = none
	liveHeap                               bool   // force a collection before each measurement
	profileRate                            int    // bytes allocated per heap sample with -profiles; 0 = Go's default
	nodes, pods, smallPods, listeners      int
	claims, volumes, services, floor       int // the rest of the realistic mix (mix.go)
	namespaces                             int // ordinary namespaces, the mix's last step
	batch                                  int // listener pods created at a time in a phase; 0 = all at once
	settle                                 time.Duration
	wait                                   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", ".work/cluster/kubeconfig", "Kubeconfig of the cluster (the project's, with the operator deployed).")
	flag.StringVar(&o.kwok, "kwok", "bin/tools/kwok", "The kwok binary.")
	flag.StringVar(&o.stages, "kwok-stages", "", "kwok's kustomize/stage directory (from its module).")
	flag.StringVar(&o.out, "out", "bin/scale.txt", "File the table is also written to.")
	flag.StringVar(&o.workDir, "work-dir", ".work/scale", "Directory for kwok's configuration and log.")
	flag.StringVar(&o.profiles, "profiles", "", "If set, turn on the controller's pprof endpoint and save each replica's heap profile there at every measurement.")
	flag.IntVar(&o.profileRate, "profile-rate", 0, "With -profiles, sample the controllers' heap once per this many bytes allocated (GODEBUG=memprofilerate; 0: Go's default of 512 KiB, too coarse to tell what a few hundred objects hold). Each sample costs memory, so the RSS of such a run is not as shipped.")
	flag.BoolVar(&o.liveHeap, "live-heap", false, "Force a collection in each controller replica just before each measurement (through the pprof endpoint, which this turns on without heap sampling unless -profiles), so that \"heap in use\" is what is live, not what the last cycle left.")
	flag.IntVar(&o.nodes, "nodes", 50, "Fake (kwok) nodes.")
	flag.IntVar(&o.pods, "pods", 10000, "Ordinary pods (no listener volume) at the large measurement.")
	flag.IntVar(&o.smallPods, "small-pods", 2000, "Ordinary pods at the small measurement (for the slope).")
	flag.IntVar(&o.listeners, "listeners", 1000, "Listener claims, half before the ordinary pods and half after; half per-claim, half naming shared Listeners.")
	flag.IntVar(&o.batch, "batch", 0, "Create each phase's listener pods this many at a time, the next batch once the pods before it run (but a quarter of a batch); 0 creates them all at once.")
	flag.IntVar(&o.claims, "claims", 10000, "Ordinary claims (another storage class, kubectl's last-applied annotation), added after the ordinary pods.")
	flag.IntVar(&o.volumes, "volumes", 5000, "Static PersistentVolumes of another CSI driver, added after the claims.")
	flag.IntVar(&o.services, "services", 5000, "Ordinary Services (each selecting ordinary pods, so each has an EndpointSlice), added after the claims.")
	flag.IntVar(&o.namespaces, "namespaces", 2000, "Ordinary namespaces (labels, other tools' annotations, kubectl's last-applied annotation), added after the Services.")
	flag.IntVar(&o.floor, "floor", -1, "Pods without a listener volume created at once after the last phase, the floor of its time to Ready (default: as many as the last phase's claims).")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "How long to wait at each size before measuring (steady state; also the window for API requests per second).")
	flag.DurationVar(&o.wait, "wait", 15*time.Minute, "How long to wait for each phase's pods and Listeners (the 10x point needs hours on 2 cores).")
	flag.Parse()
	// The API server's warnings are logged through controller-runtime's
	// logger; the harness does not read them.
	log.SetLogger(logr.Discard())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf(">> [%s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	if o.smallPods > o.pods || o.listeners < 2 || o.nodes < 1 {
		return fmt.Errorf("want 1 <= nodes, small-pods <= pods and listeners >= 2")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 300, 600
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		return err
	}
	stop, err := startKwok(ctx, o.kwok, o.stages, o.kubeconfig, o.workDir)
	if err != nil {
		return err
	}
	defer stop()
	scraper, err := metricsscrape.ForServiceAccount(ctx, c, operatorNamespace, "listener-operator-scale")
	if err != nil {
		return err
	}
	m := &measurer{c: c, cfg: cfg, scraper: scraper, profiles: o.profiles, liveHeap: o.liveHeap, wait: o.wait, batch: o.batch}
	if err := m.baseline(ctx); err != nil {
		return err
	}
	if o.profiles != "" || o.liveHeap {
		if err := enableProfiles(ctx, c, o.profiles != "", o.profileRate); err != nil {
			return err
		}
	}

	say("creating %d kwok nodes", o.nodes)
	if err := createKwokNodes(ctx, c, o.nodes); err != nil {
		return err
	}
	if err := waitFor(ctx, 3*time.Minute, "kwok nodes Ready", func() (bool, string, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.MatchingLabels{"type": "kwok"}); err != nil {
			return false, "", err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == o.nodes, fmt.Sprintf("%d/%d", ready, o.nodes), nil
	}); err != nil {
		return err
	}
	if err := ensureNamespaces(ctx, c); err != nil {
		return err
	}
	// What each component costs before any listener claim or ordinary
	// object: the base every per-claim cost adds to (not when a run is
	// resumed: its objects are there already).
	var base row
	if resumed, err := anyListenerPods(ctx, c); err != nil {
		return err
	} else if !resumed {
		if base, err = m.steady(ctx, o.settle); err != nil {
			return err
		}
		base.label = "no listener claims"
		if err := m.profile(ctx, base); err != nil {
			return err
		}
	}

	half := o.listeners / 2
	var rows []row
	small, err := m.listenerPhase(ctx, "small", half)
	if err != nil {
		return err
	}
	for _, size := range []int{o.smallPods, o.pods} {
		say("creating ordinary pods up to %d", size)
		start := time.Now()
		if _, err := createAll(ctx, c, m.ordinary, size, 32, func(i int) client.Object { return ordinaryPod(i) }); err != nil {
			return err
		}
		m.ordinary = size
		if err := waitFor(ctx, o.wait, fmt.Sprintf("%d ordinary pods Running", size), func() (bool, string, error) {
			n, err := podsNotRunning(ctx, c)
			return n == 0, fmt.Sprintf("%d pending", n), err
		}); err != nil {
			return err
		}
		say("%d pods created and Running in %s", size, time.Since(start).Round(time.Second))
		r, err := m.steady(ctx, o.settle)
		if err != nil {
			return err
		}
		r.label = fmt.Sprintf("%d pods, %d claims", size, half)
		if err := m.profile(ctx, r); err != nil {
			return err
		}
		rows = append(rows, r)
	}
	// The rest of the realistic mix: ordinary claims, static volumes of
	// another driver, ordinary Services with their EndpointSlices, then
	// ordinary namespaces, each measured at steady state.
	for _, k := range []struct {
		what  string
		n     int
		make  func(int) client.Object
		ready func() (bool, string, error)
	}{
		{"ordinary claims", o.claims, func(i int) client.Object { return ordinaryClaim(i) }, nil},
		{"volumes of another driver", o.volumes, func(i int) client.Object { return ordinary.StaticVolume(i) }, nil},
		{"ordinary Services", o.services, func(i int) client.Object { return ordinaryService(i) }, func() (bool, string, error) {
			n, err := slicesOfServices(ctx, c)
			return n >= o.services, fmt.Sprintf("%d/%d EndpointSlices", n, o.services), err
		}},
		{"ordinary namespaces", o.namespaces, func(i int) client.Object { return ordinary.Namespace(i) }, func() (bool, string, error) {
			n, err := namespacesFilled(ctx, c)
			return n >= o.namespaces, fmt.Sprintf("%d/%d namespaces filled by kube-controller-manager", n, o.namespaces), err
		}},
	} {
		if k.n == 0 {
			continue
		}
		say("creating %d %s", k.n, k.what)
		start := time.Now()
		if _, err := createAll(ctx, c, 0, k.n, 32, k.make); err != nil {
			return err
		}
		if k.ready != nil {
			if err := waitFor(ctx, 20*time.Minute, k.what, k.ready); err != nil {
				return err
			}
		}
		say("%d %s in %s", k.n, k.what, time.Since(start).Round(time.Second))
		r, err := m.steady(ctx, o.settle)
		if err != nil {
			return err
		}
		r.label = fmt.Sprintf("+ %d %s", k.n, k.what)
		r.added, r.kind = k.n, k.what
		if err := m.profile(ctx, r); err != nil {
			return err
		}
		rows = append(rows, r)
	}

	large, err := m.listenerPhase(ctx, "large", o.listeners-half)
	if err != nil {
		return err
	}
	stages, err := m.stages(ctx, "large")
	if err != nil {
		return err
	}
	r, err := m.steady(ctx, o.settle)
	if err != nil {
		return err
	}
	r.label = fmt.Sprintf("+ %d listener claims (%d in all)", o.listeners-half, o.listeners)
	r.added, r.kind = o.listeners-half, "listener claims"
	if err := m.profile(ctx, r); err != nil {
		return err
	}
	rows = append(rows, r)
	if o.floor < 0 {
		o.floor = o.listeners - half
	}
	var floor, boundFloor []float64
	if o.floor > 0 {
		if floor, err = m.floor(ctx, o.floor); err != nil {
			return err
		}
		if boundFloor, err = m.boundFloor(ctx, o.floor); err != nil {
			return err
		}
	}

	var out strings.Builder
	report(&out, o, base, rows, small, large)
	reportMix(&out, rows, large, stages, floor, boundFloor)
	fmt.Print(out.String())
	return os.WriteFile(o.out, []byte(out.String()), 0o644)
}

// waitFor polls cond every two seconds until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg, err := cond()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			msg = err.Error()
		}
		if msg != last {
			say("waiting for %s: %s", what, msg)
			last = msg
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %s: %s", what, timeout, msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
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

// measurer holds what the phases share.
type measurer struct {
	wait     time.Duration // for each phase's pods and Listeners
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

// phase is what creating a batch of listener workloads measured.
type phase struct {
	claims, listeners           int
	createP50, createP99        time.Duration // client-side pod create (API server + our webhook)
	webhookP50, webhookP99      float64       // the pod webhook's own latency, seconds
	readyP50, readyP99, readyMx time.Duration // Listener created → Ready
	leaderCPU                   float64       // CPU seconds the leader spent from the first create to the last Ready
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
	var lease coordinationv1.Lease
	leader := ""
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator.listeners.stackable.tech"}, &lease); err == nil && lease.Spec.HolderIdentity != nil {
		leader = strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
	}
	var out []component
	nodePlugin := false
	for _, p := range pods.Items {
		// The node plugin's DaemonSet tolerates every taint, so kwok
		// "runs" copies of it on the fake nodes too: not processes.
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || strings.HasPrefix(p.Spec.NodeName, kwokNodeName(0)[:len("kwok-node-")]) {
			continue
		}
		comp := p.Labels["app.kubernetes.io/component"]
		name := comp
		switch comp {
		case "controller":
			name = "controller (non-leader)"
			if p.Name == leader {
				name = "controller (leader)"
			}
		case "csi-node":
			if nodePlugin {
				continue
			}
			nodePlugin = true
			name = "csi node plugin"
		case "csi-controller":
			name = "csi controller"
		default:
			continue
		}
		s, err := scrape(ctx, m.scraper, p.Status.PodIP)
		if err != nil {
			return nil, err
		}
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		anon, file, split := residentSplit(string(p.UID))
		out = append(out, component{
			anon: anon, file: file, split: split,
			name: name, pod: p.Name, ip: p.Status.PodIP, restarts: restarts,
			rss:      s.sum("process_resident_memory_bytes"),
			heap:     s.sum("go_memstats_heap_inuse_bytes"),
			live:     s.sum("go_memstats_heap_alloc_bytes"),
			requests: s.sum("rest_client_requests_total"),
			cpu:      s.sum("process_cpu_seconds_total"),
		})
	}
	return out, nil
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

// profile saves the controller replicas' heap profiles of a measurement,
// when profiles were asked for.
func (m *measurer) profile(ctx context.Context, r row) error {
	if m.profiles == "" {
		return nil
	}
	return saveHeapProfiles(ctx, r.components, m.profiles, r.label)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
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
	var readies []float64
	if err := waitFor(ctx, m.wait, fmt.Sprintf("%d Listeners of phase %s Ready", want, name), func() (bool, string, error) {
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
	}); err != nil {
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

// report writes the harness's table.
func report(w io.Writer, o options, base row, rows []row, small, large phase) {
	mb := func(b float64) string { return fmt.Sprintf("%.1f", b/1e6) }
	fmt.Fprintf(w, "\nScale run %s: %d kwok nodes, ordinary pods %d and %d, %d listener claims\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.nodes, o.smallPods, o.pods, o.listeners)
	if o.liveHeap {
		fmt.Fprint(w, "The controllers' heap in use is read just after a forced collection (-live-heap): what is live.")
		if o.profiles != "" {
			fmt.Fprint(w, " Their pprof endpoint samples the heap (-profiles): about 1.5 MB of RSS more than as shipped.")
		} else {
			fmt.Fprint(w, " Their pprof endpoint only forces the collections (--pprof-heap-samples=false): RSS as shipped.")
		}
		fmt.Fprint(w, "\n\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cluster\tcomponent\tRSS MB\t(anon\tfile)\theap in use MB\t(objects)\trestarts\tAPI req/s\tCPU ms/s")
	all := rows
	if len(base.components) > 0 {
		all = append([]row{base}, rows...)
	}
	for _, r := range all {
		for _, c := range r.components {
			anon, file := "-", "-"
			if c.split {
				anon, file = mb(c.anon), mb(c.file)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.2f\t%.1f\n", r.label, c.name, mb(c.rss), anon, file, mb(c.heap), mb(c.live), c.restarts, r.reqPerSec[c.name], r.cpuPerSec[c.name]*1000)
		}
	}
	tw.Flush()
	if len(rows) >= 2 {
		fmt.Fprintf(w, "\nslope per ordinary pod between %d and %d pods:\n", o.smallPods, o.pods)
		d := float64(o.pods - o.smallPods)
		eachComponent(rows[1], rows[0], func(a, b component) {
			fmt.Fprintf(w, "  %-26s RSS %7.0f B/pod   heap %7.0f B/pod\n", a.name, (a.rss-b.rss)/d, (a.heap-b.heap)/d)
		})
	}
	if len(rows) > 0 && len(base.components) > 0 {
		reportPerClaim(w, o, base, rows[len(rows)-1])
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "listener claims created\tcreate p50\tcreate p99\tpod webhook p50\tpod webhook p99\tListener Ready p50\tp99\tmax\tleader CPU")
	ms := func(s float64) string {
		if math.IsNaN(s) {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", s*1000)
	}
	for _, p := range []struct {
		what string
		p    phase
	}{{fmt.Sprintf("%d with 0 ordinary pods", small.claims), small}, {fmt.Sprintf("%d with %d ordinary pods", large.claims, o.pods), large}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f s\n", p.what,
			p.p.createP50.Round(100*time.Microsecond), p.p.createP99.Round(100*time.Microsecond),
			ms(p.p.webhookP50), ms(p.p.webhookP99), p.p.readyP50, p.p.readyP99, p.p.readyMx, p.p.leaderCPU)
	}
	tw.Flush()
}

// rssTarget is issue 23's budget of each controller replica.
const rssTarget = 64e6

// reportPerClaim writes, for each component, what it grew by from no
// listener claims to the last row (all of them, with the ordinary objects,
// which cost next to nothing), per listener claim, next to what the RSS
// budget leaves each claim above the base.
func reportPerClaim(w io.Writer, o options, base, last row) {
	fmt.Fprintf(w, "\nper listener claim, from no claims to %d in the whole mix (RSS / heap in use / its objects), and what ≤ %.0f MB RSS leaves each claim above the base:\n", o.listeners, rssTarget/1e6)
	n := float64(o.listeners)
	eachComponent(last, base, func(a, b component) {
		fmt.Fprintf(w, "  %-26s RSS %7.0f B   heap %7.0f B   objects %7.0f B   budget %7.0f B\n", a.name, (a.rss-b.rss)/n, (a.heap-b.heap)/n, (a.live-b.live)/n, (rssTarget-b.rss)/n)
	})
}

// eachComponent calls fn with each component of later and the same
// component (by name) in earlier.
func eachComponent(later, earlier row, fn func(a, b component)) {
	for _, a := range later.components {
		for _, b := range earlier.components {
			if a.name == b.name {
				fn(a, b)
			}
		}
	}
}
