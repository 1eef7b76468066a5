package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/lru"
)

const (
	// QueueSize bounds the events waiting to be sent (about 1 KB each).
	QueueSize = 1000
	// SeriesSize bounds the distinct events whose series are remembered
	// (about 100 B each).
	SeriesSize = 1024
	// seriesWindow: a repeat within this long of the last one joins its
	// series (client-go's finishTime).
	seriesWindow = 6 * time.Minute
	// maxNoteBytes is the API server's limit on an event's note.
	maxNoteBytes = 1024
	// sendTimeout bounds one request to the API server.
	sendTimeout = 10 * time.Second
)

// Broadcaster sends the events of its recorders to the API server. It is a
// manager.Runnable that runs on every replica (the webhook certificates'
// bootstrap records events before any election).
type Broadcaster struct {
	client   eventsclient.EventsGetter
	scheme   *runtime.Scheme
	instance string
	log      logr.Logger
	now      func() time.Time
	queue    chan *eventsv1.Event
	series   *lru.Cache // hash of eventKey → series, the SeriesSize most recently sent
	seed     maphash.Seed
	dropped  prometheus.Counter
}

// New returns a Broadcaster that sends through client and names objects by
// scheme. dropped counts the events dropped because the queue was full (nil:
// not counted).
func New(client eventsclient.EventsGetter, scheme *runtime.Scheme, log logr.Logger, dropped prometheus.Counter) *Broadcaster {
	host, _ := os.Hostname()
	return &Broadcaster{
		client:   client,
		scheme:   scheme,
		instance: host,
		log:      log,
		now:      time.Now,
		queue:    make(chan *eventsv1.Event, QueueSize),
		series:   lru.New(SeriesSize),
		seed:     maphash.MakeSeed(),
		dropped:  dropped,
	}
}

// Recorder returns an events.EventRecorder that reports as controller.
func (b *Broadcaster) Recorder(controller string) events.EventRecorder {
	return &recorder{b: b, controller: controller, instance: controller + "-" + b.instance}
}

// NeedLeaderElection reports that events are sent on every replica.
func (*Broadcaster) NeedLeaderElection() bool { return false }

// Start sends queued events until ctx ends.
func (b *Broadcaster) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-b.queue:
			b.send(ctx, ev)
		}
	}
}

type recorder struct {
	b                    *Broadcaster
	controller, instance string
}

var _ events.EventRecorder = (*recorder)(nil)

// Eventf queues an event about regarding (and related, which may be nil).
// It never blocks: with the queue full the event is dropped and counted.
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ev, err := r.b.makeEvent(regarding, related, eventtype, reason, action, r.controller, r.instance, fmt.Sprintf(note, args...))
	if err != nil {
		r.b.log.Error(err, "Dropping an event", "reason", reason)
		return
	}
	select {
	case r.b.queue <- ev:
	default:
		if r.b.dropped != nil {
			r.b.dropped.Inc()
		}
		r.b.log.V(1).Info("Event queue full, dropping an event", "reason", reason, "regarding", ev.Regarding.Name)
	}
}

// makeEvent is the event as client-go's recorder makes it.
func (b *Broadcaster) makeEvent(regarding, related runtime.Object, eventtype, reason, action, controller, instance, note string) (*eventsv1.Event, error) {
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q is neither Normal nor Warning", eventtype)
	}
	reg, err := reference.GetReference(b.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("reference to %T: %w", regarding, err)
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(b.scheme, related); err != nil {
			return nil, fmt.Errorf("reference to %T: %w", related, err)
		}
	}
	if len(note) > maxNoteBytes {
		note = note[:maxNoteBytes-3] + "..."
	}
	now := b.now()
	ns := reg.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", reg.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: controller,
		ReportingInstance:   instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *reg,
		Related:             rel,
		Note:                note,
		Type:                eventtype,
	}, nil
}

// eventKey is what makes two events the same (client-go's getKey).
type eventKey struct {
	eventType, action, reason, controller, instance string
	regarding, related                              corev1.ObjectReference
}

func keyOf(ev *eventsv1.Event) eventKey {
	k := eventKey{eventType: ev.Type, action: ev.Action, reason: ev.Reason, controller: ev.ReportingController, instance: ev.ReportingInstance, regarding: ev.Regarding}
	if ev.Related != nil {
		k.related = *ev.Related
	}
	// The resourceVersion changes with every write of the object; a
	// repeat about the same object is still a repeat.
	k.regarding.ResourceVersion, k.related.ResourceVersion = "", ""
	return k
}

// send creates ev, or patches the series of the same event sent less than
// seriesWindow ago.
func (b *Broadcaster) send(ctx context.Context, ev *eventsv1.Event) {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	h := maphash.Comparable(b.seed, keyOf(ev))
	now := b.now()
	if v, ok := b.series.Get(h); ok && now.Sub(v.(series).last) < seriesWindow {
		s := v.(series)
		s.count++
		s.last = now
		patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.NewMicroTime(now)}})
		if err == nil {
			_, err = b.client.Events(s.namespace).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err == nil {
			b.series.Add(h, s)
			return
		}
		if !apierrors.IsNotFound(err) {
			b.log.Error(err, "Patching an event series", "event", s.name, "reason", ev.Reason)
			return
		}
		// The event is gone (its TTL passed): start again.
	}
	if _, err := b.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		b.log.Error(err, "Sending an event", "reason", ev.Reason, "regarding", ev.Regarding.Name)
		return
	}
	b.series.Add(h, series{name: ev.Name, namespace: ev.Namespace, count: 1, last: now})
}

// series is what is remembered of an event sent: where it is, how many
// times it happened and when last.
type series struct {
	name, namespace string
	count           int32
	last            time.Time
}
