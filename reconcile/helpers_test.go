package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// setup returns the shared environment, a context for the test and a fresh
// namespace.
func setup(t *testing.T) (*testenv.Env, context.Context, string) {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := t.Context()
	return e, ctx, e.Namespace(t, ctx, "t-")
}

// newClass creates a ListenerClass with a name unique to the test and
// deletes it afterwards.
func newClass(t *testing.T, ctx context.Context, c client.Client, spec v1alpha1.ListenerClassSpec) *v1alpha1.ListenerClass {
	t.Helper()
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "lc-"}, Spec: spec}
	testenv.Create(t, ctx, c, class)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), class) })
	return class
}

func listener(ns, name, class string, ports ...v1alpha1.ListenerPort) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To(class), Ports: ports},
	}
}

func port(name string, n int32) v1alpha1.ListenerPort {
	return v1alpha1.ListenerPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

// readyReason returns the reason of a Listener's Ready condition and whether
// it is true.
func readyReason(l *v1alpha1.Listener) (string, bool) {
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return "", false
	}
	return c.Reason, c.Status == metav1.ConditionTrue
}

// waitReason waits until the Listener's Ready condition has reason and
// returns the Listener.
func waitReason(t *testing.T, ctx context.Context, c client.Client, ns, name, reason string) *v1alpha1.Listener {
	t.Helper()
	l := &v1alpha1.Listener{}
	testenv.Converges(t, fmt.Sprintf("listener %s Ready reason %s", name, reason), func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		if got, _ := readyReason(l); got != reason {
			return fmt.Errorf("reason %q, conditions %+v", got, l.Status.Conditions)
		}
		return nil
	})
	return l
}

// waitStatus waits until check accepts the Listener's status.
func waitStatus(t *testing.T, ctx context.Context, c client.Client, ns, name string, check func(*v1alpha1.Listener) error) *v1alpha1.Listener {
	t.Helper()
	l := &v1alpha1.Listener{}
	testenv.Converges(t, "listener "+name+" status", func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		return check(l)
	})
	return l
}

func getService(t *testing.T, ctx context.Context, c client.Client, ns, name string, check func(*corev1.Service) error) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	testenv.Converges(t, "service "+name, func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
			return err
		}
		if check != nil {
			return check(svc)
		}
		return nil
	})
	return svc
}

// waitEvent waits for an event with reason about the named object.
func waitEvent(t *testing.T, ctx context.Context, c client.Client, ns, regarding, reason string) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	testenv.Converges(t, fmt.Sprintf("event %s about %s", reason, regarding), func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for i, ev := range evs.Items {
			if ev.Regarding.Name == regarding && ev.Reason == reason {
				found = &evs.Items[i]
				return nil
			}
			seen = append(seen, ev.Regarding.Name+"/"+ev.Reason)
		}
		return fmt.Errorf("events: %s", strings.Join(seen, ", "))
	})
	return found
}

func node(t *testing.T, ctx context.Context, c client.Client, name string, addrs ...corev1.NodeAddress) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	testenv.Create(t, ctx, c, n)
	n.Status.Addresses = addrs
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatalf("set addresses of node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), n) })
	return n
}

func resourceOne() *resource.Quantity {
	q := resource.MustParse("1")
	return &q
}

// servingPod creates a listener pod (labelled as the pod webhook labels it,
// which this package's API server does not run) that mounts claims and is
// bound to node, with its Ready condition as the kubelet would report it.
func servingPod(t *testing.T, ctx context.Context, c client.Client, ns, name, node string, ready bool, claims ...string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "example"}}},
	}
	for i, claim := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, claimVolume(fmt.Sprintf("listener-%d", i), claim))
	}
	testenv.Create(t, ctx, c, p)
	setPodReady(t, ctx, c, p, ready)
	return p
}

// setPodReady sets a running pod's Ready condition, as the kubelet does.
func setPodReady(t *testing.T, ctx context.Context, c client.Client, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	setPodStatus(t, ctx, c, p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	})
}

// bindClaim binds claim to the volume named pv, as the PV controller does.
// The operator labels its claims meanwhile: read, change, write.
func bindClaim(t *testing.T, ctx context.Context, c client.Client, claim *corev1.PersistentVolumeClaim, pv string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		claim.Spec.VolumeName = pv
		return c.Update(ctx, claim)
	}); err != nil {
		t.Fatalf("bind claim %s: %v", claim.Name, err)
	}
}

// setPodStatus changes a pod's status as the kubelet writes it. The
// operator labels its pods meanwhile: read, change, write.
func setPodStatus(t *testing.T, ctx context.Context, c client.Client, p *corev1.Pod, change func(*corev1.Pod)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		change(p)
		return c.Status().Update(ctx, p)
	}); err != nil {
		t.Fatalf("status of pod %s: %v", p.Name, err)
	}
}
