package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
			h := &podMutator{lookup: testLookup}
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
			for b.Loop() {
				if resp := h.Handle(b.Context(), req); len(resp.Patches) == 0 {
					b.Fatal("no patch")
				}
			}
		})
	}
}

// BenchmarkPodCreateThroughAPIServer creates 2,000 pods of the shape a
// StatefulSet creates (a listener claim and a data claim), 50 at a time,
// through the API server: once without the webhook configurations and once
// with them, and reports the latency percentiles of a create and their
// ratio.
func BenchmarkPodCreateThroughAPIServer(b *testing.B) {
	e := testenv.Require(b, env)
	const pods, clients = 2000, 50
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
	run := func(phase string) (p50, p99 time.Duration) {
		lat := make([]time.Duration, pods)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for w := range clients {
			wg.Go(func() {
				for i := w; i < pods; i += clients {
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
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}

	// Without: remove the configurations for the run and put them back.
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
	for b.Loop() {
		if err := c.Delete(b.Context(), &mut); err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(b.Context(), &val); err != nil {
			b.Fatal(err)
		}
		eventually(b, "webhooks unregistered", func() error {
			if webhooksActive() {
				return errorf("still called")
			}
			return nil
		})
		suffix := strconv.Itoa(b.N)
		off50, off99 := run("off" + suffix)
		restore()
		eventually(b, "webhooks registered again", func() error {
			if !webhooksActive() {
				return errorf("not called yet")
			}
			return nil
		})
		on50, on99 := run("on" + suffix)
		b.ReportMetric(float64(off50.Microseconds()), "p50-without-µs")
		b.ReportMetric(float64(off99.Microseconds()), "p99-without-µs")
		b.ReportMetric(float64(on50.Microseconds()), "p50-with-µs")
		b.ReportMetric(float64(on99.Microseconds()), "p99-with-µs")
		b.ReportMetric(float64(on50)/float64(off50), "p50-ratio")
		b.ReportMetric(float64(on99)/float64(off99), "p99-ratio")
	}
}
