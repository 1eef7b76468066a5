package caches

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listener-operator/listener-operator/internal/ordinary"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

// TestMain starts a control plane for the leader test and the benchmarks.
func TestMain(m *testing.M) {
	// The API server's warnings are logged through controller-runtime's
	// logger; nobody reads them here.
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{})
}

const benchNamespace = "cache-memory"

// ordinaryPod is ordinary pod i (internal/ordinary), on one of 50 nodes.
func ordinaryPod(i int) *corev1.Pod {
	p := ordinary.Pod(i, benchNamespace)
	p.Spec.NodeName = fmt.Sprintf("node-%02d", i%50)
	return p
}

// ensurePods creates pods 0..n-1 (those not there yet) with a few workers.
func ensurePods(ctx context.Context, c client.Client, from, n int) error {
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := from + w; i < n; i += workers {
				if err := c.Create(ctx, ordinaryPod(i)); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create pod %d: %w", i, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// heapInUse is the heap in use after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// cachedPodsHeap starts a cache with opts, fills its pod informer, and
// returns the heap it holds once synced (the heap before it started
// subtracted).
func cachedPodsHeap(b *testing.B, opts cache.Options, want int) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := heapInUse()
	opts.Scheme = env.Scheme
	c, err := cache.New(env.Config, opts)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(benchNamespace), client.UnsafeDisableDeepCopy); err != nil {
		b.Fatal(err)
	}
	if len(pods.Items) != want {
		b.Fatalf("cache holds %d pods, want %d", len(pods.Items), want)
	}
	pods = corev1.PodList{}
	after := heapInUse()
	runtime.KeepAlive(c)
	return float64(after) - float64(before)
}

// BenchmarkCacheMemory: heap the controller's pod cache holds at 2,000 and
// 10,000 ordinary pods, whole (the manager's default), trimmed, and with
// this package's policy, and the slope per pod between the two sizes. Run with
// -benchtime=1x: each size is set up once.
func BenchmarkCacheMemory(b *testing.B) {
	e := testenv.Require(b, env)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	// "whole" is the manager's default; "trimmed" keeps what TrimPod keeps
	// of every pod (the cost of a pod that mounts a listener volume);
	// "policy" is what the reconcilers ship: ordinary pods, which lack the
	// listener-volume label, are not sent at all.
	policies := []struct {
		name   string
		opts   func() cache.Options
		cached bool
	}{
		{"whole", func() cache.Options { return cache.Options{} }, true},
		{"trimmed", func() cache.Options {
			return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: TrimPod}}}
		}, true},
		{"policy", Reconcilers, false},
	}
	heaps := map[string]map[int]float64{}
	created := 0
	sizes := []int{2000, 10000}
	for _, n := range sizes {
		start := time.Now()
		if err := ensurePods(ctx, e.Client, created, n); err != nil {
			b.Fatal(err)
		}
		created = n
		b.Logf("%d pods created in %s", n, time.Since(start).Round(time.Second))
		for _, p := range policies {
			b.Run(fmt.Sprintf("pods=%d/cache=%s", n, p.name), func(b *testing.B) {
				var h float64
				for i := 0; i < b.N; i++ {
					want := 0
					if p.cached {
						want = n
					}
					h = cachedPodsHeap(b, p.opts(), want)
				}
				if heaps[p.name] == nil {
					heaps[p.name] = map[int]float64{}
				}
				heaps[p.name][n] = h
				b.ReportMetric(h/(1<<20), "heap-MiB")
				b.ReportMetric(h/float64(n), "heap-B/pod")
				if n == sizes[1] {
					if lo, ok := heaps[p.name][sizes[0]]; ok {
						b.ReportMetric((h-lo)/float64(sizes[1]-sizes[0]), "slope-B/pod")
					}
				}
			})
		}
	}
}
