package caches

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/ordinary"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The objects of a cluster that are not a listener's, one kind at a time,
// as the cluster has them (unrelatedKinds), and the heap the
// controller's caches hold for each: the cost every replica (webhooks'
// cache) and the leader (reconcilers' cache) pay per object the operator
// has nothing to do with.

const unrelatedNamespace = "cache-unrelated"

// unrelatedKinds are the kinds measured, each with object i of the kind
// (internal/ordinary: the objects make scale creates too).
var unrelatedKinds = []struct {
	name string
	make func(i int) client.Object
}{
	{"pod", func(i int) client.Object {
		p := ordinaryPod(i)
		p.Namespace = unrelatedNamespace
		return p
	}},
	{"claim", func(i int) client.Object { return ordinary.Claim(i, unrelatedNamespace, "standard") }},
	{"volume", func(i int) client.Object { return ordinary.StaticVolume(i) }},
	{"service", func(i int) client.Object { return ordinary.Service(i, unrelatedNamespace) }},
	{"endpointslice", func(i int) client.Object {
		return ordinary.EndpointSlice(i, unrelatedNamespace, fmt.Sprintf("node-%02d", i%50))
	}},
	{"node", func(i int) client.Object { return ordinary.Node(fmt.Sprintf("unrelated-node-%05d", i)) }},
	{"namespace", func(i int) client.Object { return ordinary.Namespace(i) }},
}

// ensureObjects creates objects [from, n) of a kind with a few workers.
func ensureObjects(ctx context.Context, c client.Client, from, n int, newObj func(int) client.Object, opts ...client.CreateOption) error {
	return eachObject(from, n, func(i int) error {
		obj := newObj(i)
		if err := c.Create(ctx, obj, opts...); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %d: %w", obj, i, err)
		}
		return nil
	})
}

// eachObject runs do for [from, n) with a few workers and returns the
// first error (each worker stops at its own).
func eachObject(from, n int, do func(i int) error) error {
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < n; i += workers {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// cacheConfig is a pair of cache policies: the webhooks' (every replica)
// and the reconcilers' (the leader).
type cacheConfig struct {
	name                 string
	webhooks, reconciler func() cache.Options
	// namespaceInformer: the webhooks' cache holds the namespaces' metadata,
	// trimmed to what the claim webhook reads, instead of NamespaceDefaults.
	namespaceInformer bool
	// podListenersInformer: the reconcilers' cache holds PodListeners'
	// metadata, trimmed to what the pod reconciler reads, instead of
	// PodListenersHashes.
	podListenersInformer bool
}

// webhookTypes are the types the webhooks' cache holds (webhooks.SetupWithManager
// and the Shared types; NamespaceDefaults next to it); reconcilerTypes those
// only the reconcilers' holds.
var (
	webhookTypes    = []client.Object{&v1alpha1.ListenerClass{}, &v1alpha1.Listener{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &storagev1.StorageClass{}}
	reconcilerTypes = []client.Object{&corev1.Pod{}, &corev1.Node{}, &corev1.Service{}}
)

// podListenersMetadata is the metadata-only view of PodListeners the
// reconcilers' cache held until PodListenersHashes (podListenersInformer).
func podListenersMetadata() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("PodListeners"))
	return m
}

// heapReading is the heap after two collections: live is what the live
// objects take (HeapAlloc), inUse the spans they keep in use (HeapInuse),
// the room left free in them included. live does not move with how full
// the spans happen to be (at tens of MB of heap, noise of a few hundred
// bytes per object at these sizes); inUse is what the process keeps
// resident for them, and shows how objects kept and objects dropped share
// spans (TestTrimsReuseTheDecodedObject).
type heapReading struct{ live, inUse float64 }

func (h heapReading) minus(o heapReading) heapReading {
	return heapReading{h.live - o.live, h.inUse - o.inUse}
}

func liveHeap() heapReading {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return heapReading{float64(ms.HeapAlloc), float64(ms.HeapInuse)}
}

// settledHeap is the heap once the live bytes stop shrinking: the
// informers of a cache stopped a moment ago let go of their objects only
// when their goroutines have ended.
func settledHeap() heapReading {
	last := liveHeap()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		h := liveHeap()
		if h.live+32<<10 > last.live && h.live < last.live+32<<10 {
			return h
		}
		last = h
	}
	return last
}

// medianHeaps runs replicaHeaps three times and returns the median of each
// reading.
func medianHeaps(b *testing.B, cfg cacheConfig) (webhooks, leader heapReading) {
	var runs [4][]float64 // webhooks live, in use; leader live, in use
	for range 3 {
		w, l := replicaHeaps(b, cfg)
		for i, v := range []float64{w.live, w.inUse, l.live, l.inUse} {
			runs[i] = append(runs[i], v)
		}
	}
	for i := range runs {
		sort.Float64s(runs[i])
	}
	return heapReading{runs[0][1], runs[1][1]}, heapReading{runs[2][1], runs[3][1]}
}

// replicaHeaps starts both caches of cfg with the informers the manager
// opens and returns the heap each holds once synced (the webhooks' first,
// then the reconcilers' on top of it).
func replicaHeaps(b *testing.B, cfg cacheConfig) (webhooks, leader heapReading) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(opts cache.Options, types []client.Object, indexes []Index) cache.Cache {
		opts.Scheme = env.Scheme
		c, err := cache.New(env.Config, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range types {
			if _, err := c.GetInformer(ctx, t); err != nil {
				b.Fatal(err)
			}
		}
		if err := AddIndexes(ctx, c, indexes...); err != nil {
			b.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			b.Fatal("cache did not sync")
		}
		return c
	}
	before := settledHeap()
	types := webhookTypes
	wopts, ropts := cfg.webhooks(), cfg.reconciler()
	var namespaces *NamespaceDefaults
	if cfg.namespaceInformer {
		types = append(slices.Clip(types), namespacesMetadata())
		wopts.ByObject[namespacesMetadata()] = cache.ByObject{Transform: trimNamespaceMetadata}
	} else {
		var err error
		if namespaces, err = NewNamespaceDefaults(env.Config, nil); err != nil {
			b.Fatal(err)
		}
		go func() { _ = namespaces.Start(ctx) }()
		if !namespaces.WaitForSync(ctx) {
			b.Fatal("namespaces not listed")
		}
	}
	w := start(wopts, types, benchIndexes(true))
	mid := settledHeap()
	kinds := reconcilerTypes
	var hashes *PodListenersHashes
	if cfg.podListenersInformer {
		kinds = append(slices.Clip(kinds), podListenersMetadata())
		ropts.ByObject[podListenersMetadata()] = cache.ByObject{Transform: trimPodListenersMetadata}
	} else {
		var err error
		if hashes, err = NewPodListenersHashes(env.Config, nil); err != nil {
			b.Fatal(err)
		}
		if err := hashes.Start(ctx, nil); err != nil {
			b.Fatal(err)
		}
		if err := hashes.WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	r := start(ropts, kinds, benchIndexes(false))
	after := settledHeap()
	runtime.KeepAlive(w)
	runtime.KeepAlive(r)
	runtime.KeepAlive(namespaces)
	runtime.KeepAlive(hashes)
	return mid.minus(before), after.minus(before)
}

// BenchmarkUnrelatedObjects: heap in use per object the operator has
// nothing to do with, kind by kind (pods, claims of another class with
// kubectl's last-applied copy, static volumes of another driver, Services,
// EndpointSlices, nodes, namespaces), at two sizes of that kind (the slope between
// them, other kinds unchanged), on every replica (the webhooks' cache) and
// on the leader (both caches), with the policy as shipped and with each
// trick off (trickConfigs), measured in the same process. Run with
// -benchtime=1x; UNRELATED_SIZES=small,large overrides the sizes,
// UNRELATED_KINDS=claim,volume measures only those kinds, CACHE_CONFIGS
// only those configurations.
func BenchmarkUnrelatedObjects(b *testing.B) {
	e := testenv.Require(b, env)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	sizes := benchSizesFrom(b, "UNRELATED_SIZES", []int{2000, 10000})
	configs := trickConfigs(b)
	only := os.Getenv("UNRELATED_KINDS") // e.g. "claim,volume"; empty: every kind
	for _, k := range unrelatedKinds {
		if only != "" && !slices.Contains(strings.Split(only, ","), k.name) {
			continue
		}
		heaps := map[string][2][2]float64{} // config → size index → (webhooks, leader)
		created := 0
		for si, n := range sizes {
			start := time.Now()
			if err := ensureObjects(ctx, e.Client, created, n, k.make); err != nil {
				b.Fatal(err)
			}
			created = n
			b.Logf("%d %ss in %s", n, k.name, time.Since(start).Round(time.Second))
			for _, cfg := range configs {
				b.Run(fmt.Sprintf("kind=%s/n=%d/cache=%s", k.name, n, cfg.name), func(b *testing.B) {
					var w, l float64
					for range b.N {
						wh, lh := medianHeaps(b, cfg)
						w, l = wh.live, lh.live
					}
					h := heaps[cfg.name]
					h[si] = [2]float64{w, l}
					heaps[cfg.name] = h
					b.ReportMetric(w/(1<<20), "replica-heap-MiB")
					b.ReportMetric(l/(1<<20), "leader-heap-MiB")
					if si == 1 {
						d := float64(sizes[1] - sizes[0])
						b.ReportMetric((w-h[0][0])/d, "replica-B/obj")
						b.ReportMetric((l-h[0][1])/d, "leader-B/obj")
					}
				})
			}
		}
	}
}

// benchSizesFrom reads the environment variable name ("small,large") or
// returns def.
func benchSizesFrom(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var s, l int
	if _, err := fmt.Sscanf(v, "%d,%d", &s, &l); err != nil || s >= l {
		b.Fatalf("%s=%q: want small,large", name, v)
	}
	return []int{s, l}
}
