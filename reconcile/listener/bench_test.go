package listener

import (
	"fmt"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// benchListeners is how many Listeners (and raw Services) the convergence
// benchmark creates.
const benchListeners = 1000

// BenchmarkConvergence creates 1,000 Services with client-go, then 1,000
// ClusterIP Listeners, each in a plain loop as a user's tool would, and
// compares the time until every Service exists with the time until every
// Listener has its Service and a Ready status. Then it touches the class so
// that every Listener is reconciled again and counts the writes that causes
// (a steady cluster should see none).
func BenchmarkConvergence(b *testing.B) {
	e := testenv.Require(b, reconciletest.Env)
	ctx := b.Context()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		b.Fatal(err)
	}
	wc, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	if err := e.Client.Create(ctx, class); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var rawTotal, lisTotal, createTotal time.Duration
	var convWrites, steadyWrites, steadyReconciles float64
	for i := 0; i < b.N; i++ {
		rawNS, lisNS := benchNamespace(b, e.Client), benchNamespace(b, e.Client)

		start := time.Now()
		for j := range benchListeners {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", j)},
				Spec: corev1.ServiceSpec{
					Ports:    []corev1.ServicePort{{Name: "http", Port: 8080}},
					Selector: map[string]string{"app": fmt.Sprintf("svc-%d", j)},
				},
			}
			if _, err := cs.CoreV1().Services(rawNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				b.Fatalf("create service: %v", err)
			}
		}
		rawTotal += time.Since(start)
		// Allocating a cluster IP costs the API server time proportional to
		// the IPs already allocated: start both phases from the same count.
		b.StopTimer()
		removeServices(b, e.Client, rawNS, func() { _ = e.Client.DeleteAllOf(ctx, &corev1.Service{}, client.InNamespace(rawNS)) })
		b.StartTimer()

		writes0 := listenerMetric(b, "listener_operator_writes_total")
		w, err := wc.Watch(ctx, &v1alpha1.ListenerList{}, client.InNamespace(lisNS))
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		created := make(chan time.Duration, 1)
		go func() {
			defer func() { created <- time.Since(start) }()
			for j := range benchListeners {
				if err := e.Client.Create(ctx, reconciletest.Listener(lisNS, fmt.Sprintf("l-%d", j), class.Name, reconciletest.Port("http", 8080))); err != nil {
					b.Errorf("create listener: %v", err)
					return
				}
			}
		}()
		waitAllReady(b, w)
		lisTotal += time.Since(start)
		createTotal += <-created
		w.Stop()
		convWrites += listenerMetric(b, "listener_operator_writes_total") - writes0

		// Steady state: every Listener reconciled once more, nothing to do.
		writes1 := listenerMetric(b, "listener_operator_writes_total")
		recs1 := listenerMetric(b, "listener_operator_reconcile_duration_seconds")
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			b.Fatal(err)
		}
		if class.Annotations == nil {
			class.Annotations = map[string]string{}
		}
		class.Annotations["bench-touch"] = fmt.Sprint(i)
		if err := e.Client.Update(ctx, class); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for listenerMetric(b, "listener_operator_reconcile_duration_seconds")-recs1 < benchListeners {
			if time.Now().After(deadline) {
				b.Fatalf("the class change did not reconcile %d listeners", benchListeners)
			}
			time.Sleep(20 * time.Millisecond)
		}
		steadyWrites += listenerMetric(b, "listener_operator_writes_total") - writes1
		steadyReconciles += listenerMetric(b, "listener_operator_reconcile_duration_seconds") - recs1

		b.StopTimer()
		removeServices(b, e.Client, lisNS, func() { _ = e.Client.DeleteAllOf(ctx, &v1alpha1.Listener{}, client.InNamespace(lisNS)) })
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(rawTotal.Seconds()/n, "raw-services-s")
	b.ReportMetric(lisTotal.Seconds()/n, "listeners-s")
	b.ReportMetric(createTotal.Seconds()/n, "create-listeners-s")
	b.ReportMetric(lisTotal.Seconds()/rawTotal.Seconds(), "ratio")
	b.ReportMetric(convWrites/n/benchListeners, "writes/listener")
	b.ReportMetric(steadyWrites/steadyReconciles, "steady-writes/reconcile")
}

func benchNamespace(b *testing.B, c client.Client) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := c.Create(b.Context(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

// waitAllReady reads the watch until every benchmark Listener has a Ready
// status with addresses.
func waitAllReady(b *testing.B, w watch.Interface) {
	ready := map[string]bool{}
	timeout := time.After(5 * time.Minute)
	for len(ready) < benchListeners {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("watch closed")
			}
			l, isListener := ev.Object.(*v1alpha1.Listener)
			if !isListener {
				continue
			}
			if meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReady) && len(l.Status.IngressAddresses) > 0 && l.Status.ServiceName != "" {
				ready[l.Name] = true
			}
		case <-timeout:
			b.Fatalf("only %d of %d listeners ready after 5 minutes", len(ready), benchListeners)
		}
	}
}

// listenerMetric sums a metric's samples for the Listener controller (a
// histogram counts observations).
func listenerMetric(b *testing.B, name string) float64 {
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			isListener := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "controller" && lp.GetValue() == ControllerName {
					isListener = true
				}
			}
			if !isListener {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				sum += float64(h.GetSampleCount())
			} else {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// removeServices runs remove and waits until the namespace has no Services
// left (Listeners' Services go through garbage collection).
func removeServices(b *testing.B, c client.Client, ns string, remove func()) {
	remove()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var svcs corev1.ServiceList
		if err := c.List(b.Context(), &svcs, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if len(svcs.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d services left in %s", len(svcs.Items), ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
