package caches

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The objects of a cluster that are not a listener's, one kind at a time,
// as the issue's cluster has them (unrelatedKinds), and the heap the
// controller's caches hold for each: the cost every replica (webhooks'
// cache) and the leader (reconcilers' cache) pay per object the operator
// has nothing to do with.

const unrelatedNamespace = "cache-unrelated"

// lastApplied is kubectl's copy of obj, padded to the 1.8 KB of the issue's
// claims.
func lastApplied(obj any) string {
	raw, _ := json.Marshal(obj)
	s := strings.TrimSuffix(string(raw), "}")
	return s + `,"x-pad":"` + strings.Repeat("x", max(0, 1800-len(raw))) + `"}`
}

// unrelatedKinds are the kinds measured, each with object i of the kind.
var unrelatedKinds = []struct {
	name string
	make func(i int) client.Object
}{
	{"pod", func(i int) client.Object {
		p := ordinaryPod(i)
		p.Namespace = unrelatedNamespace
		return p
	}},
	{"claim", func(i int) client.Object {
		c := &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-%05d", i), Namespace: unrelatedNamespace,
				Labels:      map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/instance": fmt.Sprintf("db-%d", i/100)},
				Annotations: map[string]string{"backup.example.com/schedule": "daily"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To("standard"),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			},
		}
		c.Annotations[annotationLastApplied] = lastApplied(c)
		return c
	}},
	{"volume", func(i int) client.Object {
		// A static volume of another CSI driver, pinned to a zone.
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-static-%05d", i),
				Labels:      map[string]string{"topology.kubernetes.io/zone": "zone-a"},
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              "standard",
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "ebs.csi.aws.com", VolumeHandle: fmt.Sprintf("vol-0a1b2c3d4e5f%05d", i), FSType: "ext4",
					VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-ebs.csi.aws.com"}}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}}}}},
			},
		}
	}},
	{"service", func(i int) client.Object {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i), Namespace: unrelatedNamespace,
				Labels:      map[string]string{"app.kubernetes.io/name": "app", "app.kubernetes.io/instance": fmt.Sprintf("app-%d", i/100)},
				Annotations: map[string]string{"prometheus.io/scrape": "true"}},
			Spec: corev1.ServiceSpec{
				// Headless: the test control plane's service range holds
				// a few hundred addresses; the object is the same size.
				ClusterIP: corev1.ClusterIPNone,
				Selector:  map[string]string{"app.kubernetes.io/name": "app", "app.kubernetes.io/instance": fmt.Sprintf("app-%d", i/100)},
				Ports:     []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			},
		}
	}},
	{"endpointslice", func(i int) client.Object {
		// As the EndpointSlice controller writes it for such a Service
		// (its labels copied) with one endpoint.
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d-abcde", i), Namespace: unrelatedNamespace,
				Labels: map[string]string{"app.kubernetes.io/name": "app", "app.kubernetes.io/instance": fmt.Sprintf("app-%d", i/100),
					discoveryv1.LabelServiceName: fmt.Sprintf("svc-%05d", i), discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(fmt.Sprintf("node-%02d", i%50)), Zone: ptr.To("zone-a"),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: unrelatedNamespace, Name: fmt.Sprintf("app-%05d", i), UID: "0b9f3c1e-6a4d-4c59-9a9e-3b8f1e2d7c6a"},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
	}},
	{"node", func(i int) client.Object {
		name := fmt.Sprintf("unrelated-node-%05d", i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					"node.kubernetes.io/instance-type": "m5.xlarge", "topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1"},
				Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
					"csi.volume.kubernetes.io/nodeid": `{"ebs.csi.aws.com":"i-0123456789abcdef0","listeners.stackable.tech":"` + name + `"}`}},
			Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", ProviderID: "aws:///zone-a/i-0123456789abcdef0"},
			Status: corev1.NodeStatus{
				Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}, {Type: corev1.NodeHostName, Address: name}},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110")},
				NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.0.0", KernelVersion: "6.8.0"},
			},
		}
		for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient" + string(c), Message: "kubelet has sufficient " + string(c)})
		}
		for k := range 10 {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/image-%d@sha256:%064d", k, k)}, SizeBytes: 100 << 20})
		}
		return n
	}},
}

// ensureObjects creates objects [from, n) of a kind with a few workers.
func ensureObjects(ctx context.Context, c client.Client, from, n int, newObj func(int) client.Object) error {
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < n; i += workers {
				obj := newObj(i)
				if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create %T %d: %w", obj, i, err)
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
}

// webhookTypes are the types the webhooks' cache holds (webhooks.SetupWithManager
// and the Shared types); reconcilerTypes those only the reconcilers' holds.
var (
	webhookTypes    = []client.Object{&v1alpha1.ListenerClass{}, &v1alpha1.Listener{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &corev1.Namespace{}, &storagev1.StorageClass{}}
	reconcilerTypes = []client.Object{&corev1.Pod{}, &corev1.Node{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}, &v1alpha1.PodListeners{}}
)

// liveHeap is the heap the live objects take after two collections
// (HeapAlloc right after a GC): unlike HeapInuse it does not move with how
// full the spans happen to be, which at tens of MB of heap is noise of a
// few hundred bytes per object at these sizes.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// settledHeap is the live heap once it stops shrinking: the informers of a
// cache stopped a moment ago let go of their objects only when their
// goroutines have ended.
func settledHeap() uint64 {
	last := liveHeap()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		h := liveHeap()
		if h+32<<10 > last && h < last+32<<10 {
			return h
		}
		last = h
	}
	return last
}

// medianHeaps runs replicaHeaps three times and returns the median of each.
func medianHeaps(b *testing.B, cfg cacheConfig) (webhooks, leader float64) {
	var ws, ls []float64
	for range 3 {
		w, l := replicaHeaps(b, cfg)
		ws, ls = append(ws, w), append(ls, l)
	}
	sort.Float64s(ws)
	sort.Float64s(ls)
	return ws[1], ls[1]
}

// replicaHeaps starts both caches of cfg with the informers the manager
// opens and returns the heap each holds once synced (the webhooks' first,
// then the reconcilers' on top of it).
func replicaHeaps(b *testing.B, cfg cacheConfig) (webhooks, leader float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(opts cache.Options, types []client.Object) cache.Cache {
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
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			b.Fatal("cache did not sync")
		}
		return c
	}
	before := settledHeap()
	w := start(cfg.webhooks(), webhookTypes)
	mid := settledHeap()
	r := start(cfg.reconciler(), reconcilerTypes)
	after := settledHeap()
	runtime.KeepAlive(w)
	runtime.KeepAlive(r)
	return float64(mid) - float64(before), float64(after) - float64(before)
}

// BenchmarkUnrelatedObjects: heap in use per object the operator has
// nothing to do with, kind by kind (pods, claims of another class with
// kubectl's last-applied copy, static volumes of another driver, Services,
// EndpointSlices, nodes), at two sizes of that kind (the slope between
// them, other kinds unchanged), on every replica (the webhooks' cache) and
// on the leader (both caches), with the policy as shipped and as it was
// before issue 23 (beforeIssue23), measured in the same process. Run with
// -benchtime=1x; UNRELATED_SIZES=small,large overrides the sizes.
func BenchmarkUnrelatedObjects(b *testing.B) {
	e := testenv.Require(b, env)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	sizes := benchSizesFrom(b, "UNRELATED_SIZES", []int{2000, 10000})
	configs := []cacheConfig{
		{"shipped", Webhooks, Reconcilers},
		{"before", beforeIssue23Webhooks, beforeIssue23Reconcilers},
	}
	for _, k := range unrelatedKinds {
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
						w, l = medianHeaps(b, cfg)
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

// beforeIssue23Webhooks and beforeIssue23Reconcilers are the cache policy
// as it was before issue 23 (commit b7a7bf5), kept to measure the shipped
// one against in the same process: every claim and volume kept its
// metadata, every Service and EndpointSlice was held, nodes kept all but
// their images.
func beforeIssue23Webhooks() cache.Options {
	return cache.Options{
		DefaultTransform: StripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: {Transform: func(obj any) (any, error) {
				c, ok := obj.(*corev1.PersistentVolumeClaim)
				if !ok {
					return obj, nil
				}
				out := &corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta}
				out.ManagedFields = nil
				out.Spec.StorageClassName = c.Spec.StorageClassName
				out.Spec.VolumeName = c.Spec.VolumeName
				out.Status.Phase = c.Status.Phase
				return out, nil
			}},
			&corev1.PersistentVolume{}: {Transform: func(obj any) (any, error) {
				pv, ok := obj.(*corev1.PersistentVolume)
				if !ok {
					return obj, nil
				}
				out := &corev1.PersistentVolume{TypeMeta: pv.TypeMeta, ObjectMeta: pv.ObjectMeta}
				out.ManagedFields = nil
				out.Spec.ClaimRef = pv.Spec.ClaimRef
				out.Spec.NodeAffinity = pv.Spec.NodeAffinity
				out.Spec.StorageClassName = pv.Spec.StorageClassName
				if src := pv.Spec.CSI; src != nil {
					out.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: src.Driver, VolumeHandle: src.VolumeHandle}
				}
				out.Status.Phase = pv.Status.Phase
				return out, nil
			}},
		},
	}
}

func beforeIssue23Reconcilers() cache.Options {
	opts := Reconcilers()
	opts.ByObject[&corev1.Node{}] = cache.ByObject{Transform: func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			n.ManagedFields = nil
			n.Status.Images = nil
		}
		return obj, nil
	}}
	for obj, by := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Service, *discoveryv1.EndpointSlice:
			by.Label = nil
			opts.ByObject[obj] = by
		}
	}
	return opts
}
