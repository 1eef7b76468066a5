//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// BenchmarkTimeToAddress measures, on the project's real nodes, how long a
// burst of pods with a listener volume takes until each pod can read its
// address, against the floor measured in the same run: the same burst of
// pods without a listener volume; and against the bound-volume floor: the
// same burst with a volume that Kubernetes alone binds (a claim made just
// after its pod, naming a hostPath volume), what any volume bound on the
// pod's behalf costs without the operator. kwok pods (make scale) never
// call NodePublish, so this is where "the pod reads its address" is
// measured.
//
// A container starts only after the kubelet mounted all of its pod's
// volumes, the listener volume included (NodePublish wrote the address
// tree), so the start of the container is when the pod can read its
// address. Each stage is the time its watch first saw it, from the pod's
// creation (client clock, sub-second):
//
//	claim created      the ephemeral volume controller made the claim
//	node selected      the scheduler chose the pod's node and wrote it on
//	                   the claim (WaitForFirstConsumer), for the provisioner
//	pod scheduled      the scheduler bound the pod (with WaitForFirstConsumer,
//	                   after its volume is bound)
//	volume provisioned the PersistentVolume exists
//	claim bound        the claim is Bound
//	Listener Ready     the claim's Listener is Ready
//	address readable   the container started (volumes mounted)
//	addresses-ready True the operator set the gate's condition True (a
//	                   gated pod)
//	pod Ready          the pod's Ready condition is True
//
// Time to Ready is measured twice in the same run (issue 50): the listener
// burst above (cluster-internal, no readiness gate) and the same burst on
// a class that differs only by spec.podReadiness: Gate, with the operator's
// pods/status writes during each (timetoready_bench_test.go).
//
// BENCH_PODS sets the burst (default 100, over the cluster's real nodes);
// run it with `make bench-address`.
func BenchmarkTimeToAddress(b *testing.B) {
	n := 100
	if v := os.Getenv("BENCH_PODS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("BENCH_PODS=%q: want a positive number", v)
		}
	}
	ctx := b.Context()
	ensureGatedBenchClass(b, ctx)
	for range b.N {
		var r benchRuns
		r.floor = burst(b, ctx, n, burstPlain)
		r.bound = burst(b, ctx, n, burstBound)
		r.listener, r.listenerWrites = burstCountingPodStatusWrites(b, ctx, n, burstListener)
		r.gated, r.gatedWrites = burstCountingPodStatusWrites(b, ctx, n, burstGated)
		// Printed whole: the testing package cuts a benchmark's log
		// after ten lines.
		fmt.Print(r.report(b, n))
	}
}

// The stages, in the order they usually happen.
const (
	stageClaim       = "claim created"
	stageSelected    = "node selected"
	stageScheduled   = "pod scheduled"
	stageProvisioned = "volume provisioned"
	stageBound       = "claim bound"
	stageListener    = "Listener Ready"
	stageStarted     = "address readable"
	stageReady       = "pod Ready"
	// stageGateTrue: the operator set the pod's readiness gate condition
	// True (gated bursts only).
	stageGateTrue = "addresses-ready True"
	// stageGated is not a stage: that the pod carries the readiness
	// gate (a gated burst checks every pod does).
	stageGated = "gated"
)

var stageOrder = []string{stageClaim, stageSelected, stageProvisioned, stageBound, stageScheduled, stageListener, stageStarted, stageReady}

// annotationSelectedNode is where the scheduler writes the node it chose
// for a claim of a WaitForFirstConsumer class.
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// burstTimeout bounds one burst; a stage not reached by then is missing
// from its row (and the benchmark fails).
const burstTimeout = 10 * time.Minute

// burstKind is what each pod of a burst mounts.
type burstKind int

const (
	// burstPlain: no volume (the floor).
	burstPlain burstKind = iota
	// burstBound: a claim of its own, created just after the pod (as the
	// ephemeral volume controller does) and naming a hostPath volume made
	// for it: the PV controller binds it and the scheduler waits for
	// that, with no listener operator part (the bound-volume floor).
	burstBound
	// burstListener: an ephemeral listener volume of the preset
	// cluster-internal class.
	burstListener
	// burstGated: the same volume of a class that differs from
	// cluster-internal only by the readiness gate (benchGatedClass).
	burstGated
)

// burst creates n pods of the kind in a namespace of its own, waits until
// every container started and returns the time of each stage per pod,
// from the pod's creation.
func burst(b *testing.B, ctx context.Context, n int, kind burstKind) map[string][]time.Duration {
	withListener := kind == burstListener || kind == burstGated
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-address-" + rand.String(5)}}
	if err := k8s.client.Create(ctx, ns); err != nil {
		b.Fatalf("create namespace: %v", err)
	}
	defer func() {
		// The next burst starts on nodes done with this one: a namespace
		// whose pods are still being stopped slows every container start
		// of the burst after it (the bursts run in turn, the listener
		// burst last).
		dctx := context.WithoutCancel(ctx)
		_ = k8s.client.Delete(dctx, ns)
		if err := wait.PollUntilContextTimeout(dctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := k8s.client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			b.Logf("namespace %s still there after 5 minutes: %v", ns.Name, err)
		}
	}()

	cfg, err := clientcmd.BuildConfigFromFlags("", k8s.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, burstTimeout)
	defer cancel()

	rec := &stageRecorder{created: map[string]time.Time{}, seen: map[string]map[string]time.Time{}}
	var wg sync.WaitGroup
	// watchAll calls each for every object of list's kind as it is added
	// or changes. A watch the server or the connection ends is started
	// again from a fresh list (a stage first seen in that list is timed
	// when it was listed: later, never earlier, than it happened).
	watchAll := func(list client.ObjectList, opts []client.ListOption, each func(obj any, now time.Time)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fresh := list.DeepCopyObject().(client.ObjectList)
				if err := wc.List(ctx, fresh, opts...); err != nil {
					time.Sleep(200 * time.Millisecond) // the API server is busy: try again
					continue
				}
				now := time.Now()
				items, _ := meta.ExtractList(fresh)
				for _, o := range items {
					each(o, now)
				}
				raw := &metav1.ListOptions{ResourceVersion: fresh.GetResourceVersion()}
				w, err := wc.Watch(ctx, fresh, append(append([]client.ListOption{}, opts...), &client.ListOptions{Raw: raw})...)
				if err != nil {
					continue
				}
				stop := context.AfterFunc(ctx, w.Stop)
				for ev := range w.ResultChan() {
					if ev.Type == watch.Added || ev.Type == watch.Modified {
						each(ev.Object, time.Now())
					}
				}
				stop()
				w.Stop()
			}
		}()
	}
	// A pod's ephemeral claim is <pod>-listener, and its per-claim Listener
	// has the claim's name (api/names).
	podOf := func(claim string) string { return strings.TrimSuffix(claim, "-listener") }
	in := []client.ListOption{client.InNamespace(ns.Name)}
	watchAll(&corev1.PodList{}, in, func(obj any, now time.Time) {
		p := obj.(*corev1.Pod)
		if p.Spec.NodeName != "" {
			rec.saw(p.Name, stageScheduled, now)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil {
				rec.saw(p.Name, stageStarted, now)
			}
		}
		if isReady(p) {
			rec.saw(p.Name, stageReady, now)
		}
		if slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == v1alpha1.PodConditionAddressesReady }) {
			rec.saw(p.Name, stageGated, now)
		}
		if gateCondition(p).Status == corev1.ConditionTrue {
			rec.saw(p.Name, stageGateTrue, now)
		}
	})
	if kind == burstBound {
		watchAll(&corev1.PersistentVolumeClaimList{}, in, func(obj any, now time.Time) {
			if c := obj.(*corev1.PersistentVolumeClaim); c.Status.Phase == corev1.ClaimBound {
				rec.saw(c.Name, stageBound, now)
			}
		})
		defer func() {
			for i := range n {
				_ = k8s.client.Delete(context.WithoutCancel(ctx), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: boundVolumeName(ns.Name, i)}})
			}
		}()
	}
	if withListener {
		watchAll(&corev1.PersistentVolumeClaimList{}, in, func(obj any, now time.Time) {
			c := obj.(*corev1.PersistentVolumeClaim)
			rec.saw(podOf(c.Name), stageClaim, now)
			if c.Annotations[annotationSelectedNode] != "" {
				rec.saw(podOf(c.Name), stageSelected, now)
			}
			if c.Status.Phase == corev1.ClaimBound {
				rec.saw(podOf(c.Name), stageBound, now)
			}
		})
		watchAll(&corev1.PersistentVolumeList{}, nil, func(obj any, now time.Time) {
			pv := obj.(*corev1.PersistentVolume)
			if r := pv.Spec.ClaimRef; r != nil && r.Namespace == ns.Name {
				rec.saw(podOf(r.Name), stageProvisioned, now)
			}
		})
		watchAll(&v1alpha1.ListenerList{}, in, func(obj any, now time.Time) {
			l := obj.(*v1alpha1.Listener)
			if meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReady) {
				rec.saw(podOf(l.Name), stageListener, now)
			}
		})
	}

	// Create the burst with a few workers, as a StatefulSet controller or
	// a Helm install would.
	const workers = 10
	var failed atomic.Int32
	next := make(chan int)
	var cw sync.WaitGroup
	for range workers {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for i := range next {
				p := addressPod(ns.Name, fmt.Sprintf("p-%04d", i), kind)
				rec.create(p.Name, time.Now())
				objs := []client.Object{p}
				if kind == burstBound {
					objs = append(objs, hostPathVolume(ns.Name, i, p.Name), boundClaim(ns.Name, i, p.Name))
				}
				for _, o := range objs {
					if err := k8s.client.Create(ctx, o); err != nil {
						if failed.Add(1) == 1 {
							b.Errorf("create %T %s: %v", o, o.GetName(), err)
						}
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	cw.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d pods were not created", f, n)
	}

	// Wait until every pod is Ready (its container started) or the burst
	// timed out.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for rec.count(stageReady) < n {
		select {
		case <-ctx.Done():
			b.Errorf("burst (kind %d): of %d pods %d started, %d Ready within %s", kind, n, rec.count(stageStarted), rec.count(stageReady), burstTimeout)
			cancel()
			wg.Wait()
			return rec.durations()
		case <-tick.C:
		}
	}
	cancel()
	wg.Wait()
	return rec.durations()
}

// addressPod is a pod whose container only sleeps; with a listener volume
// (an ephemeral claim of the cluster-internal class) mounted where the
// operator mounts it, or with the bound-volume floor's claim (boundClaim)
// mounted.
func addressPod(ns, name string, kind burstKind) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "app", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "exec sleep 3600"},
				// A per-claim Listener's ports are its pod's (a pod
				// without one is refused).
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("4Mi")}},
			}},
		},
	}
	if kind == burstBound {
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}}}
	}
	if kind == burstListener || kind == burstGated {
		class := "cluster-internal"
		if kind == burstGated {
			class = benchGatedClass
		}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "listener", MountPath: treeRoot}}
		p.Spec.Volumes = []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class}},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(v1alpha1.StorageClassName),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
				},
			},
		}}}}
	}
	return p
}

// boundVolumeName is the hostPath volume of pod i of a bound-volume burst in
// namespace ns.
func boundVolumeName(ns string, i int) string { return fmt.Sprintf("%s-%04d", ns, i) }

// hostPathVolume is a hostPath volume of the node's /tmp (nothing to
// provision, attach or clean up) reserved for the claim of pod (claimRef).
func hostPathVolume(ns string, i int, pod string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: boundVolumeName(ns, i)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: pod},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: "/tmp", Type: ptr.To(corev1.HostPathDirectory),
			}},
		},
	}
}

// boundClaim is the claim of pod, named after it, naming its volume.
func boundClaim(ns string, i int, pod string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(""),
			VolumeName:       boundVolumeName(ns, i),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}
}

// stageRecorder keeps when each pod was created and first reached each
// stage.
type stageRecorder struct {
	mu      sync.Mutex
	created map[string]time.Time
	seen    map[string]map[string]time.Time
}

func (r *stageRecorder) create(pod string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.created[pod] = at
}

func (r *stageRecorder) saw(pod, stage string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen[pod]
	if s == nil {
		s = map[string]time.Time{}
		r.seen[pod] = s
	}
	if _, ok := s[stage]; !ok {
		s[stage] = at
	}
}

func (r *stageRecorder) count(stage string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.seen {
		if _, ok := s[stage]; ok {
			n++
		}
	}
	return n
}

// durations are, per stage, the sorted times from each pod's creation.
func (r *stageRecorder) durations() map[string][]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]time.Duration{}
	for pod, stages := range r.seen {
		created, ok := r.created[pod]
		if !ok {
			continue
		}
		for stage, at := range stages {
			out[stage] = append(out[stage], max(at.Sub(created), 0))
		}
	}
	for _, d := range out {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	}
	return out
}

// pct is the p-th percentile of sorted durations, to the 10 ms.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return sorted[i].Round(10 * time.Millisecond)
}
