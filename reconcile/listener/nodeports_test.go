package listener

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestStickyNodePorts: the Service of a NodePort Listener is deleted; the
// one made anew has the same node ports. When one of them was taken in
// between, the Listener gets a new one, an event and NodePortsKept False.
func TestStickyNodePorts(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "np", class.Name, reconciletest.Port("http", 80), reconciletest.Port("admin", 81)))
	l := reconciletest.WaitStatus(t, ctx, c, ns, "np", func(l *v1alpha1.Listener) error {
		if len(l.Status.NodePorts) != 2 {
			return fmt.Errorf("node ports %v", l.Status.NodePorts)
		}
		return nil
	})
	recorded := l.Status.NodePorts
	nodePorts := func(s *corev1.Service) map[string]int32 {
		out := map[string]int32{}
		for _, p := range s.Spec.Ports {
			out[p.Name] = p.NodePort
		}
		return out
	}
	recreated := func(old *corev1.Service) *corev1.Service {
		t.Helper()
		if err := c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		return reconciletest.GetService(t, ctx, c, ns, "np", func(s *corev1.Service) error {
			if s.UID == old.UID {
				return fmt.Errorf("still the old Service")
			}
			return nil
		})
	}

	svc := recreated(reconciletest.GetService(t, ctx, c, ns, "np", nil))
	if got := nodePorts(svc); !reflect.DeepEqual(got, recorded) {
		t.Errorf("recreated Service node ports %v, want the recorded %v", got, recorded)
	}

	// Another Service takes the http node port while the Listener has
	// none. The Listener names a class that does not exist meanwhile, so
	// its reconciler leaves the Service alone (ClassNotFound keeps the
	// Service and the recorded node ports) and cannot win the race.
	setClass := func(name string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			t.Fatal(err)
		}
		l.Spec.ClassName = ptr.To(name)
		if err := c.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	setClass(class.Name + "-gone")
	reconciletest.WaitReason(t, ctx, c, ns, "np", v1alpha1.ReasonClassNotFound)
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	thief := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "thief", Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "thief"},
		Ports: []corev1.ServicePort{{Name: "x", Port: 80, NodePort: recorded["http"]}},
	}}
	// The API server frees a deleted Service's node ports a moment after
	// the deletion.
	testenv.Converges(t, "another Service takes node port "+fmt.Sprint(recorded["http"]), func() error {
		return c.Create(ctx, thief.DeepCopy())
	})
	if l := reconciletest.WaitReason(t, ctx, c, ns, "np", v1alpha1.ReasonClassNotFound); !reflect.DeepEqual(l.Status.NodePorts, recorded) {
		t.Fatalf("status.nodePorts %v while the class is missing, want the recorded %v", l.Status.NodePorts, recorded)
	}
	setClass(class.Name)
	svc = reconciletest.GetService(t, ctx, c, ns, "np", func(s *corev1.Service) error {
		if s.UID == svc.UID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
	got := nodePorts(svc)
	if got["http"] == recorded["http"] || got["admin"] != recorded["admin"] {
		t.Errorf("node ports %v; want a new http port (%d is taken) and admin kept at %d", got, recorded["http"], recorded["admin"])
	}
	reconciletest.WaitEvent(t, ctx, c, ns, "np", EventNodePortsTaken)
	reconciletest.WaitStatus(t, ctx, c, ns, "np", func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsKept)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonNodePortsTaken {
			return fmt.Errorf("condition %+v, want NodePortsKept False NodePortsTaken", cond)
		}
		if l.Status.NodePorts["http"] != got["http"] {
			return fmt.Errorf("status node ports %v, want the new %v", l.Status.NodePorts, got)
		}
		return nil
	})
}
