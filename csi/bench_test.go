package csi

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkNodePublishVolume measures what kubelet waits for when a pod
// starts: one NodePublishVolume over the driver's Unix socket, with warm
// caches (the driver reads Pod, Listener, ListenerClass and Node from its
// informers) and the atomic write of the tree. It reports the median and
// 99th percentile latency per call next to the mean.
//
// plain writes the tree into a directory on the node's disk (before
// sealed volumes, --seal-volumes=false); sealed first mounts the volume's
// own tmpfs (the default; needs root, skipped otherwise).
func BenchmarkNodePublishVolume(b *testing.B) {
	f := newFixture(b)
	ports := map[string]int32{"http": 8080, "kafka": 9092, "metrics": 9606, "jmx": 9999} // http: the fixture Listener's own port
	f.listener("cluster", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "cluster." + f.ns + ".svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: ports},
	}})
	f.listener("nodeport", f.nodePort, v1alpha1.ListenerStatus{NodePorts: map[string]int32{"http": 30080, "kafka": 30092, "metrics": 30606, "jmx": 30999}})
	drivers := map[string]*driver{
		"plain":  f.startDriver(Options{NodeName: f.node}),
		"sealed": f.startDriver(Options{NodeName: f.node, SealVolumes: true}),
	}
	for _, vol := range []string{"plain", "sealed"} {
		d := drivers[vol]
		for _, name := range []string{"cluster", "nodeport"} {
			// first: a pod starts (a fresh target, the tree written from
			// scratch). again: kubelet republishes an unchanged volume.
			for _, mode := range []string{"first", "again"} {
				b.Run(vol+"/"+name+"/"+mode, func(b *testing.B) {
					if vol == "sealed" {
						requireRoot(b)
					}
					dir := b.TempDir()
					var targets []string
					b.Cleanup(func() { // before TempDir's removal
						for _, target := range targets {
							if err := unmountSealed(target); err != nil {
								b.Error(err)
							}
						}
					})
					req := &csi.NodePublishVolumeRequest{
						VolumeId:         "pvc-" + name,
						TargetPath:       filepath.Join(dir, "mount"),
						VolumeCapability: mountCap(),
						VolumeContext:    f.volumeContext(name, name),
					}
					targets = append(targets, req.TargetPath)
					ctx := context.Background()
					if _, err := d.node.NodePublishVolume(ctx, req); err != nil {
						b.Fatal(err)
					}
					var took []time.Duration
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						if mode == "first" {
							req.TargetPath = filepath.Join(dir, strconv.Itoa(i))
							targets = append(targets, req.TargetPath)
						}
						start := time.Now()
						if _, err := d.node.NodePublishVolume(ctx, req); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(start))
					}
					slices.Sort(took)
					b.ReportMetric(float64(percentile(took, 50).Microseconds()), "p50-µs")
					b.ReportMetric(float64(percentile(took, 99).Microseconds()), "p99-µs")
				})
			}
		}
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// BenchmarkNodePluginListeners measures what a node plugin holds and is
// sent as Listeners pile up elsewhere in the cluster: the heap it keeps
// after a GC, the Listener watch events it receives while every Listener
// of the cluster gets one status write, and the Listener API calls of a
// first publish and of a republish. "cluster-wide" is the node cache
// before ListenerScope (every Listener watched on every node); "scoped" is
// the node plugin now, with 5 Listeners used by pods of its node. Run with
// -benchtime=1x: one round is the measurement.
func BenchmarkNodePluginListeners(b *testing.B) {
	e := testenv.Require(b, env)
	f := newFixture(b)
	created := 0
	for _, total := range []int{100, 1000} {
		for ; created < total; created = min(created+64, total) {
			createListeners(b, f, created, min(created+64, total))
		}
		for _, run := range []struct {
			mode string
			used int
		}{{"cluster-wide", 5}, {"scoped", 5}, {"scoped", 250}} {
			if run.used > total/2 {
				continue
			}
			b.Run(fmt.Sprintf("listeners=%d/%s/used=%d", total, run.mode, run.used), func(b *testing.B) {
				for b.Loop() {
					measureNodePlugin(b, e, f, total, run.used, run.mode)
				}
			})
		}
	}
}

// createListeners makes Listeners l-<from>..l-<to-1>, ready, of the
// fixture's ClusterIP class, 8 at a time.
func createListeners(b *testing.B, f *fixture, from, to int) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for i := from; i < to; i++ {
		g.Go(func() error {
			l := &v1alpha1.Listener{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fmt.Sprintf("l-%d", i)},
				Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To(f.clusterIP), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080}}},
			}
			if err := f.c.Create(context.Background(), l); err != nil {
				return err
			}
			return writeStatus(f.c, l, "l.example.com")
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func writeStatus(c client.Client, l *v1alpha1.Listener, host string) error {
	l.Status = hostStatus(host)
	l.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		ObservedGeneration: l.Generation, LastTransitionTime: metav1.Now()}}
	return c.Status().Update(context.Background(), l)
}

// measureNodePlugin starts a node plugin's reads in mode, reads the used
// Listeners (those its pods use), and reports memory, events and API calls.
func measureNodePlugin(b *testing.B, e *testenv.Env, f *fixture, total, usedN int, mode string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := &apiCounter{}
	cfg := calls.wrap(e.Config)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	var events atomic.Uint64
	var reader client.Reader
	var scope *ListenerScope
	c, err := NewCache(ctx, cfg, e.Scheme, CacheOptions{NodeName: f.node})
	if err != nil {
		b.Fatal(err)
	}
	if mode == "cluster-wide" {
		inf, err := c.GetInformer(ctx, &v1alpha1.Listener{})
		if err != nil {
			b.Fatal(err)
		}
		count := func(any) { events.Add(1) }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(any, any) { events.Add(1) }, DeleteFunc: count}); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	reader = c
	if mode == "scoped" {
		live, err := client.NewWithWatch(cfg, client.Options{Scheme: e.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		scope, err = NewListenerScope(ListenerScopeOptions{Base: FallbackReader{Cache: c, Live: live}, Client: live})
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = scope.Start(ctx) }()
		reader = scope
	}
	used := make([]*v1alpha1.Listener, usedN)
	calls.listenerCalls()
	for _, what := range []string{"cold", "warm"} {
		for i := range used {
			used[i] = &v1alpha1.Listener{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fmt.Sprintf("l-%d", i*(total/usedN))}, used[i]); err != nil {
				b.Fatal(err)
			}
		}
		n := 0
		for _, v := range calls.listenerCalls() {
			n += v
		}
		b.ReportMetric(float64(n)/float64(len(used)), what+"-calls/publish")
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Heap and goroutine stacks: each watch runs a few goroutines.
	held := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	b.ReportMetric(float64(held)/(1<<20), "heap+stack-MB")

	// Every Listener of the cluster gets one status write.
	received := func() uint64 {
		if scope != nil {
			return scope.Events()
		}
		return events.Load()
	}
	start := received()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range total {
		g.Go(func() error {
			l := &v1alpha1.Listener{}
			if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fmt.Sprintf("l-%d", i)}, l); err != nil {
				return err
			}
			return writeStatus(f.c, l, fmt.Sprintf("l-%s.example.com", mode))
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	want := uint64(total)
	if scope != nil {
		want = uint64(len(used))
	}
	// Wait for the writes this plugin must see, then a little for any it
	// should not.
	deadline := time.Now().Add(30 * time.Second)
	for received()-start < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	b.ReportMetric(float64(received()-start), "events/write-round")
	runtime.KeepAlive(reader)
}
