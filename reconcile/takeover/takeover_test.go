package takeover

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/foreign"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// countingReader counts the lists it passes to the API server.
type countingReader struct {
	client.Reader
	mu    sync.Mutex
	lists int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Reader.List(ctx, list, opts...)
}

func (c *countingReader) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists
}

// TestTakeoverListsPodsOnce: the takeover reads the pods a foreign selector
// matches from the API server once, labels them so that the reconcilers'
// cache holds them, and looks at them in the cache from then on, a pod that
// gets the other operator's label later included (it is labelled too). The
// earlier Listener controller listed them live on every look (every 2 s and
// more while any lacked the label).
func TestTakeoverListsPodsOnce(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	const listenerName = "web"
	theirKey := v1alpha1.PodSelectorLabelPrefix + "0a1b2c3d4e5f"
	ourKey := names.PodSelectorLabel(listenerName)
	pod := func(name string, extra map[string]string) *corev1.Pod {
		labels := map[string]string{theirKey: listenerName}
		maps.Copy(labels, extra)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.test/web"}}},
		}
	}
	testenv.Create(t, ctx, c, pod("web-0", nil), pod("web-1", nil))
	// The Service as the other operator left it (in memory: no Listener
	// owns it, so the manager's own takeover leaves these pods alone).
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: listenerName, Namespace: ns, UID: types.UID("svc-" + ns)},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{theirKey: listenerName}},
	}
	want := map[string]string{ourKey: v1alpha1.PodSelectorLabelValue}
	live := &countingReader{Reader: c}
	r := &takeoverReconciler{client: reconciletest.LeaderClient, live: live, recorder: events.NewFakeRecorder(100)}

	look := func(wantPods ...string) {
		t.Helper()
		testenv.Converges(t, fmt.Sprintf("pods %v selected and labelled", wantPods), func() error {
			pods, check, err := r.selectedPods(ctx, svc, want)
			if err != nil {
				return err
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(wantPods) {
				return fmt.Errorf("selected %v", got)
			}
			if p := waitingPod(check, pods); p != nil {
				return fmt.Errorf("pod %s lacks %v", p.Name, check)
			}
			return nil
		})
	}
	look("web-0", "web-1")
	for range 3 {
		look("web-0", "web-1")
	}
	// A pod the other operator's label reaches later (with the
	// listener-volume label, as the pod webhook or the relabel scan gives
	// every pod of a listener volume).
	testenv.Create(t, ctx, c, pod("web-2", map[string]string{v1alpha1.LabelListenerVolume: "true"}))
	look("web-0", "web-1", "web-2")
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		p := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if p.Labels[ourKey] != v1alpha1.PodSelectorLabelValue || p.Labels[v1alpha1.LabelListenerVolume] != "true" {
			t.Errorf("pod %s labels %v, want the operator's selector and listener-volume labels", name, p.Labels)
		}
	}
	if n := live.count(); n != 1 {
		t.Errorf("%d lists of pods from the API server, want 1 (then the cache)", n)
	}
}

// TestTakeoverEvents: which Listener a pod's or a Service's event concerns.
func TestTakeoverEvents(t *testing.T) {
	theirKey := v1alpha1.PodSelectorLabelPrefix + "0a1b2c"
	owner := []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: "web", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"a pod with the other operator's label", requests(foreign.ListenersOfPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{theirKey: "web"}}})), []string{"ns/web"}},
		{"a pod with ours only", requests(foreign.ListenersOfPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{names.PodSelectorLabel("web"): "true"}}})), nil},
		{"a Service with a foreign selector", requests(listenerOfForeignService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: owner}, Spec: corev1.ServiceSpec{Selector: map[string]string{theirKey: "web"}}})), []string{"ns/web"}},
		{"a Service with ours", requests(listenerOfForeignService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: owner}, Spec: corev1.ServiceSpec{Selector: map[string]string{names.PodSelectorLabel("web"): "true"}}})), nil},
		{"a Service no Listener controls", requests(listenerOfForeignService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: map[string]string{theirKey: "web"}}})), nil},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestCacheDecides: the cached pods (which keep only the operator's labels)
// decide a switch unless the wanted selector names a label they drop that
// the foreign one does not select by.
func TestCacheDecides(t *testing.T) {
	theirKey, ourKey := v1alpha1.PodSelectorLabelPrefix+"0a1b2c", names.PodSelectorLabel("web")
	for _, tc := range []struct {
		name          string
		foreign, want map[string]string
		decides       bool
	}{
		{"listener labels only", map[string]string{theirKey: "web"}, map[string]string{ourKey: "true"}, true},
		{"the same extra labels on both", map[string]string{theirKey: "web", "app": "web"}, map[string]string{ourKey: "true", "app": "web"}, true},
		{"an extra label only the new selector names", map[string]string{theirKey: "web"}, map[string]string{ourKey: "true", "tier": "never"}, false},
		{"the StatefulSet pod name is cached", map[string]string{theirKey: "web"}, map[string]string{ourKey: "true", v1alpha1.LabelStatefulSetPodName: "web-0"}, true},
	} {
		if got := cacheDecides(tc.foreign, tc.want); got != tc.decides {
			t.Errorf("%s: cacheDecides = %v, want %v", tc.name, got, tc.decides)
		}
	}
}

func requests[T fmt.Stringer](reqs []T) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.String())
	}
	return out
}
