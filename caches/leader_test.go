package caches

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// podWatches is the number of open WATCH requests on pods the API server
// counts (apiserver_longrunning_requests).
func podWatches(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	return watches(t, cs, "", "pods")
}

// watches is the number of open WATCH requests the API server counts on a
// resource of an API group ("" for the core group).
func watches(t *testing.T, cs kubernetes.Interface, group, resource string) int {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `resource="`+resource+`"`) ||
			!strings.Contains(line, `verb="WATCH"`) || !strings.Contains(line, `group="`+group+`"`) || !strings.Contains(line, `subresource=""`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// attemptCountingLock is a leader-election lock that signals each time the
// elector reads it, which it does once per attempt at the lease.
type attemptCountingLock struct {
	resourcelock.Interface
	attempts chan struct{}
}

func (l *attemptCountingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	select {
	case l.attempts <- struct{}{}:
	default: // the test has stopped counting
	}
	return r, raw, err
}

// TestLeaderOnly: a replica that is not the leader serves from the
// webhooks' cache and opens no watch on pods; once elected, the
// reconcilers' cache starts and holds only the pods with the
// listener-volume label. Listeners, a shared type, are read through the
// view from the webhooks' cache before and after the election, with one
// watch between them.
func TestLeaderOnly(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(e.Config)
	const ns, leaseName = "default", "caches-leader-test"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("the-other-replica"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	if err := e.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for i, labels := range []map[string]string{{v1alpha1.LabelListenerVolume: "true"}, nil} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("leader-test-%d", i), Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	listener := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leader-test"},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To("leader-test-class")},
	}
	if err := e.Client.Create(ctx, listener); err != nil {
		t.Fatal(err)
	}
	before := podWatches(t, cs)

	// The lease as the manager would make it, counting the elector's
	// attempts: the signal that this replica has tried and been refused.
	lock := &attemptCountingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: leaseName},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "this-replica"},
	}, attempts: make(chan struct{}, 1)}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                              e.Scheme,
		Metrics:                             metricsserver.Options{BindAddress: "0"},
		Cache:                               Webhooks(),
		LeaderElection:                      true,
		LeaderElectionNamespace:             ns,
		LeaderElectionID:                    leaseName,
		LeaderElectionResourceLockInterface: lock,
		RetryPeriod:                         ptr.To(200 * time.Millisecond),
		RenewDeadline:                       ptr.To(time.Second),
		LeaseDuration:                       ptr.To(2 * time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	// What reconcile does: an index and a controller on pods, through the
	// view.
	view := viewWithPodsByNode(t, mgr)
	seen := make(chan string, 10)
	if err := ctrl.NewControllerManagedBy(view).Named("leader-test").For(&corev1.Pod{}).
		Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			seen <- req.Name
			return reconcile.Result{}, nil
		})); err != nil {
		t.Fatal(err)
	}
	// What reconcile does with a shared type: an index on Listeners,
	// through the view.
	if err := view.GetFieldIndexer().IndexField(ctx, &v1alpha1.Listener{}, "spec.className", func(o client.Object) []string {
		if c := o.(*v1alpha1.Listener).Spec.ClassName; c != nil {
			return []string{*c}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// What the webhooks do: informers in the manager's own cache.
	if _, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.ListenerClass{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.Listener{}); err != nil {
		t.Fatal(err)
	}

	runManager(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the webhooks' cache did not sync")
	}

	// Not the leader: the manager starts every runnable that does not need
	// the election before it campaigns, so once the elector has read the
	// other replica's lease twice (the second read begins after the first
	// attempt was refused), everything a replica that is not the leader
	// runs has started. The reconcilers' cache must not be among it: it
	// says so itself, and no pod watch is open, nothing reconciled.
	for i := range 2 {
		select {
		case <-lock.attempts:
		case <-time.After(time.Minute):
			t.Fatalf("the elector made %d attempts at the lease in a minute, want 2", i)
		}
	}
	select {
	case <-mgr.Elected():
		t.Fatal("elected while the other replica holds the lease")
	default:
	}
	var notStarted *cache.ErrCacheNotStarted
	if err := view.GetClient().List(ctx, &corev1.PodList{}, client.InNamespace(ns)); !errors.As(err, &notStarted) {
		t.Errorf("listing pods through the view on a replica that is not the leader: err %v, want the reconcilers' cache not started", err)
	}
	if got := podWatches(t, cs); got != before {
		t.Errorf("pod watches went from %d to %d on a replica that is not the leader", before, got)
	}
	testenv.Eventually(t, 30*time.Second, "a listener watch for the webhooks' informer", func() error {
		if n := watches(t, cs, v1alpha1.GroupVersion.Group, "listeners"); n < 1 {
			return fmt.Errorf("%d listener watches", n)
		}
		return nil
	})
	listenersBefore := watches(t, cs, v1alpha1.GroupVersion.Group, "listeners")
	if len(seen) != 0 {
		t.Errorf("a replica that is not the leader reconciled %q", <-seen)
	}
	listenerByClass := func() error {
		var ls v1alpha1.ListenerList
		if err := view.GetClient().List(ctx, &ls, client.InNamespace(ns), client.MatchingFields{"spec.className": "leader-test-class"}); err != nil {
			return err
		}
		if len(ls.Items) != 1 || ls.Items[0].Name != "leader-test" {
			return fmt.Errorf("listeners of class leader-test-class through the view: %d, want leader-test", len(ls.Items))
		}
		return nil
	}
	testenv.Eventually(t, 30*time.Second, "the Listener through the view before the election", listenerByClass)

	// The other replica goes; this one is elected and its reconcilers see
	// the labelled pod only.
	if err := e.Client.Delete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mgr.Elected():
	case <-time.After(time.Minute):
		t.Fatal("not elected within a minute of the lease's deletion")
	}
	if !view.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the reconcilers' cache did not sync")
	}
	testenv.Eventually(t, 30*time.Second, "a pod watch", func() error {
		if got := podWatches(t, cs); got <= before {
			return fmt.Errorf("pod watches %d, were %d", got, before)
		}
		return nil
	})
	if err := listenerByClass(); err != nil {
		t.Errorf("after the election: %v", err)
	}
	if got := watches(t, cs, v1alpha1.GroupVersion.Group, "listeners"); got != listenersBefore {
		t.Errorf("listener watches went from %d to %d on election: the reconcilers hold a second copy of a shared type", listenersBefore, got)
	}
	var pods corev1.PodList
	if err := view.GetClient().List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "leader-test-0" {
		t.Errorf("the reconcilers' cache holds pods %v, want only the labelled leader-test-0", names)
	}
	select {
	case name := <-seen:
		if name != "leader-test-0" {
			t.Errorf("reconciled %s, want leader-test-0", name)
		}
	case <-time.After(30 * time.Second):
		t.Error("the leader reconciled nothing")
	}
}
