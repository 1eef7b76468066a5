package nodeloss

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// leaderTestPrefix starts the namespaces of TestNewLeaderCarriesOn: the
// package's shared controller leaves them to the test's own leaders.
const leaderTestPrefix = "leader-"

// leader is one run of the controller in a manager of its own, as a
// replica that won the election: fresh process memory, its own event
// broadcaster. It reconciles only ns.
type leader struct {
	stop func() error
	// deposed ends the leadership: set, reconciles in flight lose their
	// context (their writes fail) and no other one runs.
	deposed context.Context
	depose  context.CancelFunc
	// deposeOn, if set, is the event reason whose recording deposes it.
	deposeOn string

	mu         sync.Mutex
	recorded   []string // "reason kind/name" of each event it recorded
	reconciled map[string]int
}

// startLeader starts a leader of ns as the operator's identity cfg.
func startLeader(t *testing.T, cfg *rest.Config, ns, deposeOn string) *leader {
	t.Helper()
	l := &leader{deposeOn: deposeOn, reconciled: map[string]int{}}
	l.deposed, l.depose = context.WithCancel(context.Background())
	stop, err := env.StartManager(cfg, testenv.ManagerOptions{
		Cache:      caches.Webhooks(),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			view, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, err
			}
			opts := options.Default()
			opts.NodeLoss.HandoverTimeout = testHandoverTimeout
			opts.Wrap = func(_ string, r crreconcile.Reconciler) crreconcile.Reconciler { return l.wrap(ns, r) }
			return view, SetupAlone(view, opts, &recorderOf{l: l, inner: view.GetEventRecorder(v1alpha1.FieldManager)})
		},
	})
	if err != nil {
		t.Fatalf("start a leader: %v", err)
	}
	var once sync.Once
	var stopped error
	l.stop = func() error {
		once.Do(func() { l.depose(); stopped = stop() })
		return stopped
	}
	t.Cleanup(func() { _ = l.stop() })
	return l
}

// wrap runs r for requests of ns while l leads, counting them.
func (l *leader) wrap(ns string, r crreconcile.Reconciler) crreconcile.Reconciler {
	return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		if req.Namespace != ns || l.deposed.Err() != nil {
			return crreconcile.Result{}, nil
		}
		ctx, cancel := context.WithCancel(ctx)
		defer context.AfterFunc(l.deposed, cancel)()
		defer cancel()
		res, err := r.Reconcile(ctx, req)
		l.mu.Lock()
		l.reconciled[req.Name]++
		l.mu.Unlock()
		return res, err
	})
}

func (l *leader) reconciles(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reconciled[name]
}

func (l *leader) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recorded)
}

// recorderOf records l's events and deposes l on l.deposeOn.
type recorderOf struct {
	l     *leader
	inner events.EventRecorder
}

func (r *recorderOf) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	what := reason
	if o, ok := regarding.(client.Object); ok {
		what = fmt.Sprintf("%s %T/%s", reason, o, o.GetName())
	}
	r.l.mu.Lock()
	r.l.recorded = append(r.l.recorded, what)
	r.l.mu.Unlock()
	r.inner.Eventf(regarding, related, eventtype, reason, action, note, args...)
	if reason == r.l.deposeOn {
		r.l.depose()
	}
}

// TestNewLeaderCarriesOn: leadership changes while a pinned node is lost.
// A new leader repeats no explanation the last one recorded, and a leader
// that lost its lease right after releasing a claim leaves its Pending pod
// to the next one, which recreates it although the claim's class is gone
// by then (nothing tells it the class's policy: the release itself does).
func TestNewLeaderCarriesOn(t *testing.T) {
	f := newFixtureIn(t, leaderTestPrefix, &v1alpha1.PinnedNodeLoss{Release: v1alpha1.PinnedNodeReleaseNever})
	cfg, err := env.UserWithClusterRole(f.ctx, f.ns, filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.5.2")
	sts := f.statefulSet(b.Name)
	claim := f.waitClaim("listener-web-0")
	pod := &corev1.Pod{}
	testenv.Converges(t, "pod web-0", func() error { return f.get("web-0", pod) })
	f.unpinTemplate(sts)
	f.bind(claim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	lis, _ := f.waitListener("listener-web-0")
	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}

	// The first leader explains (release: Never).
	first := startLeader(t, cfg, f.ns, "")
	f.waitEvent("NodeLost event on the claim", claim.UID, v1alpha1.ReasonNodeLost, "no longer exists")
	f.waitEvent("NodeLost event on the pod", pod.UID, v1alpha1.ReasonNodeLost, "no longer exists")
	if err := first.stop(); err != nil {
		t.Fatalf("first leader: %v", err)
	}

	// The second one has nothing new to say; it releases the claim when
	// asked to, and loses its lease at once (before its pod step).
	second := startLeader(t, cfg, f.ns, v1alpha1.ReasonReleased)
	testenv.Converges(t, "second leader reconciles the claim", func() error {
		if second.reconciles(claim.Name) == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if got := second.events(); len(got) != 0 {
		t.Errorf("the second leader recorded %q; want nothing (the first one explained it all)", got)
	}
	cur := &corev1.PersistentVolumeClaim{}
	testenv.Converges(t, "annotate the claim", func() error {
		if err := f.get(claim.Name, cur); err != nil {
			return err
		}
		cur.Annotations[v1alpha1.AnnotationReleasePinnedNode] = b.Name
		return f.c.Update(f.ctx, cur)
	})
	<-second.deposed.Done()
	f.waitEvent("Released event on the claim", claim.UID, v1alpha1.ReasonReleased, "as its annotation")
	f.waitEvent("Released event on the Listener", lis.UID, v1alpha1.ReasonReleased, "as its annotation")
	if err := second.stop(); err != nil {
		t.Fatalf("second leader: %v", err)
	}

	// The class goes; the claim goes (the StatefulSet may bring a new,
	// unbound one back).
	if err := f.c.Delete(f.ctx, &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: f.class}}); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "old claim gone", func() error {
		err := f.get(claim.Name, cur)
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != claim.UID) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
	if p := (&corev1.Pod{}); f.get(pod.Name, p) != nil || p.UID != pod.UID {
		t.Fatalf("pod web-0 was replaced before the third leader: the test did not reach its point")
	}

	// The third one recreates the pod, and repeats nothing.
	third := startLeader(t, cfg, f.ns, "")
	f.waitEvent("PodRecreated event on the pod", pod.UID, v1alpha1.ReasonPodRecreated, "requires node "+b.Name)
	testenv.Converges(t, "web-0 recreated", func() error {
		p := &corev1.Pod{}
		if err := f.get(pod.Name, p); err != nil {
			return err
		}
		if p.UID == pod.UID {
			return fmt.Errorf("still the old pod")
		}
		return nil
	})
	for _, e := range third.events() {
		if e != v1alpha1.ReasonPodRecreated+" *v1.Pod/web-0" {
			t.Errorf("the third leader recorded %q; want only PodRecreated on web-0", e)
		}
	}
	if got := f.events(claim.UID, v1alpha1.ReasonReleased); len(got) != 1 {
		t.Errorf("%d Released events on the claim, want 1: %q", len(got), got)
	}
	if got := f.events(lis.UID, v1alpha1.ReasonReleased); len(got) != 1 {
		t.Errorf("%d Released events on the Listener, want 1: %q", len(got), got)
	}
}
