package csi

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/ordinary"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkNodePluginPods measures what the pods of its node that are not a
// listener's cost a node plugin: the heap its cache holds once synced with
// 50 and with 250 ordinary pods on the node (internal/ordinary: two
// containers with env, probes, resources, as make scale's), and the slope
// per pod between the two. "shipped" is NewCache (the pods trimmed by
// caches.TrimPod); "whole" is the cache before it, which kept every pod of
// the node without its managedFields only. A node runs up to its pod limit
// (110 by default, 250 at most): the slope times that limit is what a busy
// node's plugin pays. Run with -benchtime=1x.
func BenchmarkNodePluginPods(b *testing.B) {
	e := testenv.Require(b, env)
	f := newFixture(b)
	sizes := []int{50, 250}
	heap := map[string][]float64{}
	created := 0
	for _, n := range sizes {
		var g errgroup.Group
		g.SetLimit(8)
		for i := created; i < n; i++ {
			g.Go(func() error {
				p := ordinary.Pod(i, f.ns)
				p.Spec.NodeName = f.node
				if err := f.c.Create(context.Background(), p); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		created = n
		for _, mode := range []string{"shipped", "whole"} {
			b.Run(fmt.Sprintf("pods=%d/cache=%s", n, mode), func(b *testing.B) {
				var held float64
				for b.Loop() {
					held = nodeCacheHeap(b, e, f.node, mode)
				}
				heap[mode] = append(heap[mode], held)
				b.ReportMetric(held/(1<<20), "heap-MiB")
				if h := heap[mode]; len(h) == 2 {
					b.ReportMetric((h[1]-h[0])/float64(sizes[1]-sizes[0]), "B/pod")
				}
			})
		}
	}
}

// nodeCacheHeap starts a node plugin's cache (mode "shipped": NewCache;
// "whole": its pods untrimmed) and returns the live heap it holds once
// synced, the median of three starts.
func nodeCacheHeap(b *testing.B, e *testenv.Env, node, mode string) float64 {
	var runs []float64
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		before := settled()
		var c cache.Cache
		var err error
		if mode == "shipped" {
			c, err = NewCache(ctx, e.Config, e.Scheme, CacheOptions{NodeName: node})
		} else {
			c, err = cache.New(e.Config, cache.Options{Scheme: e.Scheme, DefaultTransform: caches.Compact,
				ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", node)}}})
			if err == nil {
				_, err = c.GetInformer(ctx, &corev1.Pod{})
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			b.Fatal("cache did not sync")
		}
		runs = append(runs, settled()-before)
		runtime.KeepAlive(c)
		cancel()
		time.Sleep(200 * time.Millisecond) // let the informers' goroutines end
	}
	slices.Sort(runs)
	return runs[1]
}

// settled is the live heap after two collections.
func settled() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}
