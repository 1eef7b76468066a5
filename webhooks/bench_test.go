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

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkPodAdmission is the pod webhook's handler on the admission of a
// StatefulSet replica: decode, look up its two claims (and the listener
// claim's pinned volume) in the warm cache, compute the patch.
func BenchmarkPodAdmission(b *testing.B) {
	testenv.Require(b, env)
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	pinnedClaim(b, ns, "listener-web-0-pinned", "node-1")
	object := strings.ReplaceAll(statefulSetPodJSON, "NS", ns)
	for _, bc := range []struct{ name, object string }{
		{"unpinned", object},
		{"pinned", strings.Replace(object, `"claimName": "listener-web-0"`, `"claimName": "listener-web-0-pinned"`, 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := &podMutator{lookup: testLookup, validator: &workloadValidator{lookup: testLookup}}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
				Namespace: ns, Name: "web-0", Object: runtime.RawExtension{Raw: []byte(bc.object)},
			}}
			// Wait for the cache to hold the claims, as it does in steady state.
			eventually(b, "claims in cache", func() error {
				if len(h.Handle(b.Context(), req).Patches) == 0 {
					return errorf("no patch yet")
				}
				return nil
			})
			b.ReportAllocs()
			b.ResetTimer()
			// On a machine shared with other work, ns/op includes waiting
			// for a core; the process's CPU time per op does not.
			cpu0 := processCPU(b, os.Getpid())
			for b.Loop() {
				if resp := h.Handle(b.Context(), req); len(resp.Patches) == 0 {
					b.Fatal("no patch")
				}
			}
			b.ReportMetric(float64((processCPU(b, os.Getpid())-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPodCreateThroughAPIServer creates 2,000 pods of the shape a
// StatefulSet creates (a listener claim and a data claim), 50 at a time,
// through the API server without the webhook configurations and 2,000 with
// them, and reports the latency percentiles of a create and their ratio.
func BenchmarkPodCreateThroughAPIServer(b *testing.B) {
	e := testenv.Require(b, env)
	const pods, clients, rounds = 2000, 50, 2
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
	labelKey := names.PodSelectorLabel("listener-web-0")
	// webhooksActive says whether the API server calls the pod webhook.
	webhooksActive := func() bool {
		p := template.DeepCopy()
		p.Name = "probe"
		if err := c.Create(b.Context(), p, client.DryRunAll); err != nil {
			b.Fatal(err)
		}
		return p.Labels[labelKey] == "true"
	}
	// run creates n pods named <phase>-<i> from clients goroutines and
	// returns each create's latency.
	run := func(phase string, n int) []time.Duration {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for w := range clients {
			wg.Go(func() {
				for i := w; i < n; i += clients {
					p := template.DeepCopy()
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
	percentiles := func(lat []time.Duration) (p50, p99 time.Duration) {
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}

	// "Without" removes the configurations for a while and puts them back.
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
	unregister := func() {
		for _, o := range []client.Object{mut.DeepCopy(), val.DeepCopy()} {
			if err := c.Delete(b.Context(), o); err != nil {
				b.Fatal(err)
			}
		}
		eventually(b, "webhooks unregistered", func() error {
			if webhooksActive() {
				return errorf("still called")
			}
			return nil
		})
	}
	register := func() {
		restore()
		eventually(b, "webhooks registered again", func() error {
			if !webhooksActive() {
				return errorf("not called yet")
			}
			return nil
		})
	}
	// CPU time is what the webhooks cost on a machine that is busy with
	// other work too, where latency mostly measures waiting for a core.
	apiserver := childProcess(b, "kube-apiserver")
	var offAPI, onAPI, offSelf, onSelf time.Duration
	measure := func(phase string, apiCPU, selfCPU *time.Duration) []time.Duration {
		a0, s0 := processCPU(b, apiserver), processCPU(b, os.Getpid())
		lat := run(phase, pods/rounds)
		*apiCPU += processCPU(b, apiserver) - a0
		*selfCPU += processCPU(b, os.Getpid()) - s0
		return lat
	}
	// The modes alternate in rounds, so that neither profits from running
	// first (an emptier etcd) or last (warmer caches).
	for b.Loop() {
		var off, on []time.Duration
		for r := range rounds {
			unregister()
			off = append(off, measure(fmt.Sprintf("off-%d-%d", b.N, r), &offAPI, &offSelf)...)
			register()
			on = append(on, measure(fmt.Sprintf("on-%d-%d", b.N, r), &onAPI, &onSelf)...)
		}
		off50, off99 := percentiles(off)
		on50, on99 := percentiles(on)
		b.ReportMetric(float64(off50.Microseconds()), "p50-without-µs")
		b.ReportMetric(float64(off99.Microseconds()), "p99-without-µs")
		b.ReportMetric(float64(on50.Microseconds()), "p50-with-µs")
		b.ReportMetric(float64(on99.Microseconds()), "p99-with-µs")
		b.ReportMetric(float64(on50)/float64(off50), "p50-ratio")
		b.ReportMetric(float64(on99)/float64(off99), "p99-ratio")
		b.ReportMetric(float64(offAPI.Microseconds())/pods, "apiserver-cpu-without-µs/create")
		b.ReportMetric(float64(onAPI.Microseconds())/pods, "apiserver-cpu-with-µs/create")
		// The test process is both the 50 clients and the webhook server:
		// the difference is the webhook server's share.
		b.ReportMetric(float64((onSelf-offSelf).Microseconds())/pods, "webhook-server-cpu-µs/create")
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
