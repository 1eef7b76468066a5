package listener

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// The tests of this file take their ranges from the API server's static
// band (30000-30085) where no other test's range is: 30078-30082.

// TestNodePortRangeShortKeepsBackOnlyWhatNeedsAPort: while its class's
// range has no room for a Listener's new ports, its existing Service still
// drops the ports the Listener dropped and takes the class's metadata; only
// what needs a node port it cannot have is kept back, and Ready says so.
func TestNodePortRangeShortKeepsBackOnlyWhatNeedsAPort(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	t.Run("a NodePort Service keeps back its new ports", func(t *testing.T) {
		rng := v1alpha1.NodePortRange{From: 30078, To: 30080}
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80), reconciletest.Port("admin", 81)))
		before := inRange(t, c, ns, "web", rng, 2)
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "filler", class.Name, reconciletest.Port("x", 1)))
		inRange(t, c, ns, "filler", rng, 1)
		setClassAnnotation(t, c, class.Name, "example.test/zone", "b")
		setPorts(t, c, ns, "web", reconciletest.Port("http", 80), reconciletest.Port("metrics", 82), reconciletest.Port("extra", 83))
		l := reconciletest.WaitReason(t, ctx, c, ns, "web", v1alpha1.ReasonNodePortRangeExhausted)
		svc := serviceHas(t, c, ns, "web", []string{"http"}, "example.test/zone", "b")
		if svc.Spec.Ports[0].NodePort != before["http"] {
			t.Errorf("port http moved from node port %d to %d", before["http"], svc.Spec.Ports[0].NodePort)
		}
		if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "until then Service web is without metrics, extra") {
			t.Errorf("Ready message %q does not say what is kept back", msg)
		}
	})
	t.Run("a ClusterIP Service stays of type ClusterIP", func(t *testing.T) {
		plain := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
		rng := v1alpha1.NodePortRange{From: 30081, To: 30081}
		lb := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodePortRange: &rng,
			ServiceAnnotations: map[string]string{"example.test/pool": "private"}})
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "full", lb.Name, reconciletest.Port("x", 1)))
		inRange(t, c, ns, "full", rng, 1)
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "db", plain.Name, reconciletest.Port("a", 8080), reconciletest.Port("b", 9092)))
		serviceHas(t, c, ns, "db", []string{"a", "b"}, "", "")
		moveListener(t, c, ns, "db", lb.Name, reconciletest.Port("b", 9092))
		l := reconciletest.WaitReason(t, ctx, c, ns, "db", v1alpha1.ReasonNodePortRangeExhausted)
		svc := serviceHas(t, c, ns, "db", []string{"b"}, "example.test/pool", "private")
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].NodePort != 0 {
			t.Errorf("type %s, node port %d; want ClusterIP without one until the range has room", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
		}
		if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "until then Service db stays of type ClusterIP") {
			t.Errorf("Ready message %q does not say the Service stays ClusterIP", msg)
		}
	})
	t.Run("node ports kept outside the range are named", func(t *testing.T) {
		lb := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
		rng := v1alpha1.NodePortRange{From: 30082, To: 30082}
		ranged := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "fill", ranged.Name, reconciletest.Port("x", 1)))
		inRange(t, c, ns, "fill", rng, 1)
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "moved", lb.Name, reconciletest.Port("http", 80)))
		old := serviceHas(t, c, ns, "moved", []string{"http"}, "", "").Spec.Ports[0].NodePort
		moveListener(t, c, ns, "moved", ranged.Name, reconciletest.Port("http", 80), reconciletest.Port("admin", 81))
		l := reconciletest.WaitReason(t, ctx, c, ns, "moved", v1alpha1.ReasonNodePortRangeExhausted)
		want := fmt.Sprintf("until then Service moved is without admin, and keeps node ports http=%d outside range 30082-30082", old)
		if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, want) {
			t.Errorf("Ready message %q, want %q", msg, want)
		}
	})
}

// serviceHas waits until Service name has exactly the ports named (in
// order) and, when key is set, annotation key=value.
func serviceHas(t *testing.T, c client.Client, ns, name string, ports []string, key, value string) *corev1.Service {
	t.Helper()
	return reconciletest.GetService(t, t.Context(), c, ns, name, func(s *corev1.Service) error {
		var got []string
		for _, p := range s.Spec.Ports {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, ports) {
			return fmt.Errorf("ports %v, want %v", got, ports)
		}
		if key != "" && s.Annotations[key] != value {
			return fmt.Errorf("annotation %s=%q, want %q", key, s.Annotations[key], value)
		}
		return nil
	})
}

func setClassAnnotation(t *testing.T, c client.Client, name, key, value string) {
	t.Helper()
	testenv.Converges(t, "update "+name, func() error {
		class := &v1alpha1.ListenerClass{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, class); err != nil {
			return err
		}
		if class.Spec.ServiceAnnotations == nil {
			class.Spec.ServiceAnnotations = map[string]string{}
		}
		class.Spec.ServiceAnnotations[key] = value
		return c.Update(t.Context(), class)
	})
}

func moveListener(t *testing.T, c client.Client, ns, name, class string, ports ...v1alpha1.ListenerPort) {
	t.Helper()
	testenv.Converges(t, "update "+name, func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		l.Spec.ClassName, l.Spec.Ports = &class, ports
		return c.Update(t.Context(), l)
	})
}
