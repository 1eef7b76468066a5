package recorder

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	cgevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sync/atomic"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{})
}

// TestEvents: what a user reads with kubectl events: each event as
// recorded, a repeat folded into the series of the first, and events about
// other objects or for other reasons kept apart.
func TestEvents(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, "recorder")
	cs := kubernetes.NewForConfigOrDie(e.Config)
	b := New(cs.EventsV1(), e.Scheme, logr.Discard(), nil)
	go func() { _ = b.Start(ctx) }()
	rec := b.Recorder("listeners.stackable.tech")

	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka"}, Spec: v1alpha1.ListenerSpec{ClassName: new("cluster-internal")}}
	testenv.Create(t, ctx, e.Client, l)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	testenv.Create(t, ctx, e.Client, svc)
	other := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zookeeper"}, Spec: v1alpha1.ListenerSpec{ClassName: new("cluster-internal")}}
	testenv.Create(t, ctx, e.Client, other)

	rec.Eventf(l, svc, corev1.EventTypeNormal, "ServiceCreated", "Apply", "Created Service %s", svc.Name)
	for range 3 {
		rec.Eventf(l, nil, corev1.EventTypeWarning, "ForeignService", "Reconcile", "Service %s is not controlled by this Listener", "kafka")
	}
	rec.Eventf(other, nil, corev1.EventTypeWarning, "ForeignService", "Reconcile", "%s", strings.Repeat("x", 2000))

	type seen struct {
		regarding, reason, typ, action, related string
		count                                   int32
		noteLen                                 int
	}
	testenv.Eventually(t, 30*time.Second, "the events", func() error {
		var list eventsv1.EventList
		if err := e.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		got := map[string]seen{}
		ours := 0
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "Service" && ev.ReportingController != "listeners.stackable.tech" {
				// The API server's own (1.33's ipallocator repair
				// controller reports on the new Service): not the recorder's.
				continue
			}
			ours++
			s := seen{regarding: ev.Regarding.Kind + "/" + ev.Regarding.Name, reason: ev.Reason, typ: ev.Type, action: ev.Action, count: 1, noteLen: len(ev.Note)}
			if ev.Related != nil {
				s.related = ev.Related.Kind + "/" + ev.Related.Name
			}
			if ev.Series != nil {
				s.count = ev.Series.Count
			}
			if ev.ReportingController != "listeners.stackable.tech" || !strings.HasPrefix(ev.ReportingInstance, "listeners.stackable.tech-") {
				return fmt.Errorf("event %s reported by %q / %q", ev.Name, ev.ReportingController, ev.ReportingInstance)
			}
			got[s.regarding+" "+s.reason] = s
		}
		want := map[string]seen{
			"Listener/kafka ServiceCreated":     {regarding: "Listener/kafka", reason: "ServiceCreated", typ: "Normal", action: "Apply", related: "Service/kafka", count: 1, noteLen: len("Created Service kafka")},
			"Listener/kafka ForeignService":     {regarding: "Listener/kafka", reason: "ForeignService", typ: "Warning", action: "Reconcile", count: 3, noteLen: len("Service kafka is not controlled by this Listener")},
			"Listener/zookeeper ForeignService": {regarding: "Listener/zookeeper", reason: "ForeignService", typ: "Warning", action: "Reconcile", count: 1, noteLen: maxNoteBytes},
		}
		if ours != len(want) {
			return fmt.Errorf("%d events, want %d: %+v", ours, len(want), got)
		}
		for k, w := range want {
			if got[k] != w {
				return fmt.Errorf("%s: got %+v, want %+v", k, got[k], w)
			}
		}
		return nil
	})
}

// TestRecorderIsBounded: a burst far larger than the queue drops the rest
// and counts them, never blocks the caller, and the series remembered stay
// within SeriesSize.
func TestRecorderIsBounded(t *testing.T) {
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	b := New(nil, testenv.Scheme(), logr.Discard(), dropped)
	rec := b.Recorder("listeners.stackable.tech")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 * QueueSize {
			rec.Eventf(pod(i), nil, corev1.EventTypeNormal, "ListenerCreated", "Create", "Created Listener %d", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Eventf blocked with nobody sending")
	}
	if got := testutil.ToFloat64(dropped); got != 2*QueueSize {
		t.Errorf("dropped %v, want %d", got, 2*QueueSize)
	}
	for i := range 3 * SeriesSize {
		b.series.Add(uint64(i), series{name: fmt.Sprint(i), count: 1})
	}
	if n := b.series.Len(); n != SeriesSize {
		t.Errorf("%d series remembered, want %d", n, SeriesSize)
	}
	if _, ok := b.series.Get(uint64(3*SeriesSize - 1)); !ok {
		t.Error("the most recent series was forgotten")
	}
	if _, ok := b.series.Get(0); ok {
		t.Error("the oldest series is still remembered")
	}
}

// TestBadEventsAreDropped: an event type other than Normal or Warning, or
// an object the scheme cannot name, is not queued.
func TestBadEventsAreDropped(t *testing.T) {
	b := New(nil, testenv.Scheme(), logr.Discard(), nil)
	rec := b.Recorder("listeners.stackable.tech")
	rec.Eventf(pod(1), nil, "Info", "Reason", "Action", "note")
	rec.Eventf(&struct{ corev1.Pod }{}, nil, corev1.EventTypeNormal, "Reason", "Action", "note")
	if n := len(b.queue); n != 0 {
		t.Errorf("%d events queued, want 0", n)
	}
}

func pod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: fmt.Sprintf("kafka-%05d", i), UID: types.UID(fmt.Sprintf("0b9f3c1e-6a4d-4c59-9a9e-%012d", i))}}
}

// countingSink accepts every event at once and counts them, as client-go's
// broadcaster's sink (an events.EventSink).
type countingSink struct{ sent atomic.Int64 }

func (s *countingSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.sent.Add(1)
	return ev, nil
}

func (s *countingSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return ev, nil
}

func (s *countingSink) Patch(_ context.Context, ev *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return ev, nil
}

// createSink is countingSink as this package's client.
type createSink struct {
	eventsclient.EventInterface
	sink *countingSink
}

func (s createSink) Events(string) eventsclient.EventInterface { return s }

func (s createSink) Create(ctx context.Context, ev *eventsv1.Event, _ metav1.CreateOptions) (*eventsv1.Event, error) {
	return s.sink.Create(ctx, ev)
}

// BenchmarkRecorderMemory: heap held per event once a burst of events
// about distinct objects has been sent, by client-go's broadcaster (what
// controller-runtime's recorder uses) and by this package.
func BenchmarkRecorderMemory(b *testing.B) {
	const n = 10000
	objs := make([]*corev1.Pod, n)
	for i := range objs {
		objs[i] = pod(i)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, name := range []string{"client-go", "recorder"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var perEvent float64
			for b.Loop() {
				ctx, cancel := context.WithCancel(b.Context())
				sink := &countingSink{}
				var rec cgevents.EventRecorder
				before := heap()
				if name == "client-go" {
					bc := cgevents.NewBroadcaster(sink)
					if err := bc.StartRecordingToSinkWithContext(ctx); err != nil {
						b.Fatal(err)
					}
					rec = bc.NewRecorder(testenv.Scheme(), "listeners.stackable.tech")
				} else {
					bc := New(createSink{sink: sink}, testenv.Scheme(), logr.Discard(), nil)
					go func() { _ = bc.Start(ctx) }()
					rec = bc.Recorder("listeners.stackable.tech")
				}
				for i, o := range objs {
					rec.Eventf(o, nil, corev1.EventTypeNormal, "ServiceCreated", "Apply", "Created Service %s", o.Name)
					if i%(QueueSize/2) == 0 {
						// Both drop what does not fit their queue of
						// 1,000; here the sink keeps up with the burst.
						for int(sink.sent.Load()) < i {
							time.Sleep(time.Millisecond)
						}
					}
				}
				for deadline := time.Now().Add(30 * time.Second); sink.sent.Load() < n; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d events sent", sink.sent.Load(), n)
					}
				}
				perEvent = float64(heap()-before) / n
				runtime.KeepAlive(rec)
				cancel()
			}
			b.ReportMetric(perEvent, "B/event-held")
		})
	}
}
