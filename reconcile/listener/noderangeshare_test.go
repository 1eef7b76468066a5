package listener

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// The tests of this file take their ranges from the API server's static
// band (30000-30085) where no other test's range is: 30024-30051.

// inRange waits until Service name has a node port in rng for each of its
// ports, and returns them by port name.
func inRange(t *testing.T, c client.Client, ns, name string, rng v1alpha1.NodePortRange, ports int) map[string]int32 {
	t.Helper()
	svc := reconciletest.GetService(t, t.Context(), c, ns, name, func(s *corev1.Service) error {
		if len(s.Spec.Ports) != ports {
			return fmt.Errorf("ports %v, want %d", s.Spec.Ports, ports)
		}
		for _, p := range s.Spec.Ports {
			if !rng.Contains(p.NodePort) {
				return fmt.Errorf("port %s has node port %d, outside range %s", p.Name, p.NodePort, rng)
			}
		}
		return nil
	})
	return nodePortsOf(svc)
}

// distinct fails the test when two of the maps give one node port.
func distinct(t *testing.T, all ...map[string]int32) {
	t.Helper()
	seen := map[int32]bool{}
	for _, m := range all {
		for name, p := range m {
			if seen[p] {
				t.Errorf("node port %d (port %s) is given twice: %v", p, name, all)
			}
			seen[p] = true
		}
	}
}

// neverTaken waits until Listener name reports its range (the status the
// Service's creation publishes) and checks that it was not told its ports
// were taken, and that status.nodePorts stays empty for a LoadBalancer.
func neverTaken(t *testing.T, c client.Client, ns, name string, class *v1alpha1.ListenerClass) *v1alpha1.Listener {
	t.Helper()
	l := reconciletest.WaitStatus(t, t.Context(), c, ns, name, func(l *v1alpha1.Listener) error {
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("NodePortsInRange %+v", cond)
		}
		return nil
	})
	if kept := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsKept); kept != nil && kept.Status != metav1.ConditionTrue {
		t.Errorf("%s: NodePortsKept = %+v, although nothing was taken from it", name, kept)
	}
	if class.Spec.ServiceType == v1alpha1.ServiceTypeLoadBalancer && len(l.Status.NodePorts) > 0 {
		t.Errorf("%s: status.nodePorts = %v: a LoadBalancer Listener publishes none (readers take them as node-scoped)", name, l.Status.NodePorts)
	}
	return l
}

// TestNodePortRangeLoadBalancer: two Listeners of a LoadBalancer class
// with a range, made at once, get Services with distinct node ports in the
// range, and neither is told that its ports were taken: the range counts
// the node ports the class's Services hold.
func TestNodePortRangeLoadBalancer(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	rng := v1alpha1.NodePortRange{From: 30024, To: 30029}
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodePortRange: &rng})
	for _, name := range []string{"first", "second", "third"} {
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, name, class.Name, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093)))
	}
	var got []map[string]int32
	for _, name := range []string{"first", "second", "third"} {
		got = append(got, inRange(t, c, ns, name, rng, 2))
		neverTaken(t, c, ns, name, class)
	}
	distinct(t, got...)
}

// TestNodePortRangeShare: a class's spec.nodePortRange.perNamespace bounds
// what the Listeners of one namespace hold of its range: a Listener that
// would exceed it gets no Service (or, for ports added to it, its Service
// stays as it is) and says which share and how many ports the namespace
// holds; another namespace has a share of its own.
func TestNodePortRangeShare(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	other := e.Namespace(t, ctx, "t-")
	rng := v1alpha1.NodePortRange{From: 30036, To: 30045, PerNamespace: ptr.To(int32(3))}
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})

	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "x1", class.Name, reconciletest.Port("a", 1), reconciletest.Port("b", 2)))
	x1 := inRange(t, c, ns, "x1", rng, 2)
	testenv.Create(t, ctx, c, reconciletest.Listener(other, "y1", class.Name, reconciletest.Port("a", 1), reconciletest.Port("b", 2), reconciletest.Port("c", 3)))
	y1 := inRange(t, c, other, "y1", rng, 3)
	distinct(t, x1, y1)

	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "x2", class.Name, reconciletest.Port("a", 1), reconciletest.Port("b", 2)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "x2", v1alpha1.ReasonNodePortShareExceeded)
	shareMessage(t, l, other, "namespace "+ns+" holds 2 of the 3 node ports of range 30036-30045 that ListenerClass "+class.Name+" allows one namespace (spec.nodePortRange.perNamespace), and this Listener needs 2 more")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x2"}, &corev1.Service{}); err == nil {
		t.Error("a Listener beyond its namespace's share got a Service")
	}

	// A port added to x1 fits the share; a fourth does not, and the
	// Service keeps the three it has.
	addPorts(t, c, ns, "x1", reconciletest.Port("c", 3))
	x1 = inRange(t, c, ns, "x1", rng, 3)
	distinct(t, x1, y1)
	addPorts(t, c, ns, "x1", reconciletest.Port("d", 4))
	l = reconciletest.WaitReason(t, ctx, c, ns, "x1", v1alpha1.ReasonNodePortShareExceeded)
	shareMessage(t, l, other, "holds 3 of the 3 node ports")
	if got := inRange(t, c, ns, "x1", rng, 3); fmt.Sprint(got) != fmt.Sprint(x1) {
		t.Errorf("the Service of a Listener beyond its share changed its node ports: %v → %v", x1, got)
	}

	// At the share, a port renamed (c, d → e) fits: the port the Service
	// drops counts for no one, and is not given again in the same write.
	setPorts(t, c, ns, "x1", reconciletest.Port("a", 1), reconciletest.Port("b", 2), reconciletest.Port("e", 5))
	svc := reconciletest.GetService(t, ctx, c, ns, "x1", func(s *corev1.Service) error {
		if got := nodePortsOf(s); len(got) != 3 || !rng.Contains(got["e"]) {
			return fmt.Errorf("node ports %v, want a, b and e in range %s", got, rng)
		}
		return nil
	})
	if got := nodePortsOf(svc); got["a"] != x1["a"] || got["b"] != x1["b"] || got["e"] == x1["c"] {
		t.Errorf("node ports %v after c was renamed e in %v", got, x1)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "x1", func(l *v1alpha1.Listener) error {
		if reason, _ := reconciletest.ReadyReason(l); reason == v1alpha1.ReasonNodePortShareExceeded {
			return fmt.Errorf("Ready reason %s", reason)
		}
		return nil
	})
}

// shareMessage checks the Ready message of a Listener beyond its share: it
// says want, and names no other namespace.
func shareMessage(t *testing.T, l *v1alpha1.Listener, other, want string) {
	t.Helper()
	msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, want) || strings.Contains(msg, other) {
		t.Errorf("Ready message %q, want %q and no namespace %s", msg, want, other)
	}
}

// addPorts adds ports to Listener name's spec.ports.
func addPorts(t *testing.T, c client.Client, ns, name string, ports ...v1alpha1.ListenerPort) {
	t.Helper()
	changePorts(t, c, ns, name, func(had []v1alpha1.ListenerPort) []v1alpha1.ListenerPort { return append(had, ports...) })
}

// setPorts sets Listener name's spec.ports.
func setPorts(t *testing.T, c client.Client, ns, name string, ports ...v1alpha1.ListenerPort) {
	t.Helper()
	changePorts(t, c, ns, name, func([]v1alpha1.ListenerPort) []v1alpha1.ListenerPort { return ports })
}

func changePorts(t *testing.T, c client.Client, ns, name string, change func([]v1alpha1.ListenerPort) []v1alpha1.ListenerPort) {
	t.Helper()
	testenv.Converges(t, "change the ports of "+name, func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		l.Spec.Ports = change(l.Spec.Ports)
		return c.Update(t.Context(), l)
	})
}

// TestNodePortRangeFullTakesNothing: a tenant whose Listener needs more
// than a range has left never gets another namespace's ports: its Listener
// says why it is short (naming no other namespace), and a smaller one gets
// the free ports without being told its ports were taken.
func TestNodePortRangeFullTakesNothing(t *testing.T) {
	e, ctx, nsA := reconciletest.Setup(t)
	c := e.Client
	nsB := e.Namespace(t, ctx, "t-")
	rng := v1alpha1.NodePortRange{From: 30030, To: 30035}
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodePortRange: &rng})
	testenv.Create(t, ctx, c, reconciletest.Listener(nsA, "alpha-kafka", class.Name, reconciletest.Port("a", 1), reconciletest.Port("b", 2)))
	alpha := inRange(t, c, nsA, "alpha-kafka", rng, 2)
	before := reconciletest.GetService(t, ctx, c, nsA, "alpha-kafka", nil)

	var five []v1alpha1.ListenerPort
	for i := range 5 {
		five = append(five, reconciletest.Port(fmt.Sprintf("p%d", i), int32(i+1)))
	}
	testenv.Create(t, ctx, c, reconciletest.Listener(nsB, "greedy", class.Name, five...))
	l := reconciletest.WaitReason(t, ctx, c, nsB, "greedy", v1alpha1.ReasonNodePortRangeExhausted)
	msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message
	if want := "2 of its 6 ports are in use (0 of them by this namespace's Listeners) and this Listener needs 5"; !strings.Contains(msg, want) || strings.Contains(msg, nsA) || strings.Contains(msg, "alpha") {
		t.Errorf("Ready message %q, want %q and nothing of namespace %s", msg, want, nsA)
	}

	testenv.Create(t, ctx, c, reconciletest.Listener(nsB, "small", class.Name, five[:4]...))
	small := inRange(t, c, nsB, "small", rng, 4)
	neverTaken(t, c, nsB, "small", class)
	distinct(t, alpha, small)
	after := reconciletest.GetService(t, ctx, c, nsA, "alpha-kafka", nil)
	if after.UID != before.UID || fmt.Sprint(nodePortsOf(after)) != fmt.Sprint(alpha) {
		t.Errorf("namespace A's Service changed: %v → %v", alpha, nodePortsOf(after))
	}
}

// TestNodePortRangePortAdded: a port added to the Listener of a range
// class gets its node port in the range, and the Service's other ports
// keep theirs.
func TestNodePortRangePortAdded(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	rng := v1alpha1.NodePortRange{From: 30046, To: 30051}
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80)))
	first := inRange(t, c, ns, "web", rng, 1)
	addPorts(t, c, ns, "web", reconciletest.Port("admin", 81))
	got := inRange(t, c, ns, "web", rng, 2)
	if got["http"] != first["http"] || got["admin"] == got["http"] {
		t.Errorf("node ports %v after a port was added to %v", got, first)
	}
	nodePortsAre(t, c, ns, "web", got)
}

// TestNodePortRangeShareAtOnce: Listeners of one namespace made at once,
// each asking for a block of its own, hold no more than the namespace's
// share together: the reconciles of one class's range write one at a time
// and see the ports given a moment ago that the cache does not show yet.
func TestNodePortRangeShareAtOnce(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	rng := v1alpha1.NodePortRange{From: 30052, To: 30059, PerNamespace: ptr.To(int32(4))}
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
	var replicas []*v1alpha1.Listener
	for i := range 4 {
		replicas = append(replicas, replicaListener(t, c, ns, fmt.Sprintf("data-kafka-%d", i), class.Name))
	}
	for _, l := range replicas {
		testenv.Create(t, ctx, c, l)
	}
	served, refused := 0, 0
	testenv.Converges(t, "every replica judged", func() error {
		served, refused = 0, 0
		for _, l := range replicas {
			got := &v1alpha1.Listener{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
				return err
			}
			switch reason, _ := reconciletest.ReadyReason(got); {
			case reason == v1alpha1.ReasonNodePortShareExceeded:
				refused++
			case meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNodePortsInRange) != nil:
				served++
			default:
				return fmt.Errorf("%s: Ready reason %q", l.Name, reason)
			}
		}
		return nil
	})
	if served != 2 || refused != 2 {
		t.Errorf("%d replicas got a Service and %d were refused, want 2 and 2 (a share of 4 ports, 2 a replica)", served, refused)
	}
}
