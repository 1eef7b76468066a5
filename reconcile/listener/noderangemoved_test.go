package listener

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// The tests of this file take their ranges from the API server's static
// band (30000-30085) where no other test's range is: 30083-30084.

// TestNodePortRangeHeldByMovedListener: a Listener moved to another class
// keeps its Service's node port inside its old class's range; the next
// Listener of that range is given another port on its first create, and is
// not told its ports were taken (issue 49: the range counted only its own
// class's Listeners, so the API server refused the port five times and the
// Listener got NodePortsTaken).
func TestNodePortRangeHeldByMovedListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	rng := v1alpha1.NodePortRange{From: 30083, To: 30084}
	ranged := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
	other := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		ServiceAnnotations: map[string]string{"example.test/class": "other"}})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "old", ranged.Name, reconciletest.Port("x", 1)))
	held := inRange(t, c, ns, "old", rng, 1)["x"]
	given := time.Now()
	moveListener(t, c, ns, "old", other.Name, reconciletest.Port("x", 1))
	if got := serviceHas(t, c, ns, "old", []string{"x"}, "example.test/class", "other").Spec.Ports[0].NodePort; got != held {
		t.Fatalf("the moved Listener's node port went from %d to %d; the test needs it kept", held, got)
	}
	// The class remembers the ports it gave for rangeGivenTTL (rangeWrites):
	// the robustness run met the range after that.
	time.Sleep(time.Until(given.Add(rangeGivenTTL + time.Second)))
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "new", ranged.Name, reconciletest.Port("x", 1)))
	got := inRange(t, c, ns, "new", rng, 1)
	if got["x"] == held {
		t.Errorf("new Listener was given node port %d, which the moved Listener's Service holds", held)
	}
	neverTaken(t, c, ns, "new", ranged)
}

// TestRangeHolders: what holds a range is every Listener's Service with a
// node port in it, whatever its class, each by its namespace; the asking
// Listener's own Service and Services no Listener controls are not counted.
func TestRangeHolders(t *testing.T) {
	rng := v1alpha1.NodePortRange{From: 30100, To: 30229} // two index blocks
	own := types.NamespacedName{Namespace: "a", Name: "web"}
	cases := []struct {
		name     string
		services []*corev1.Service
		want     map[int32]string
	}{
		{"none", nil, map[int32]string{}},
		{"another namespace's Service in the range", []*corev1.Service{listenerService("b", "db", 30100, 29999)}, map[int32]string{30100: "b"}},
		{"ports in both blocks", []*corev1.Service{listenerService("b", "db", 30127, 30128, 30229, 30230)}, map[int32]string{30127: "b", 30128: "b", 30229: "b"}},
		{"own Service left out", []*corev1.Service{listenerService("a", "web", 30101), listenerService("a", "api", 30102)}, map[int32]string{30102: "a"}},
		{"a Service no Listener controls", []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "foreign"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1, NodePort: 30103}}}}}, map[int32]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			for _, s := range tc.services {
				objs = append(objs, s)
			}
			got, err := rangeHolders(t.Context(), reconciletest.FakeClient(objs...), rng, own)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
}

// listenerService is a Service of Listener name in ns with the node ports.
func listenerService(ns, name string, ports ...int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: name, UID: types.UID(ns + "/" + name), Controller: ptr.To(true)}}}}
	for i, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: string(rune('a' + i)), Port: int32(i + 1), NodePort: p})
	}
	return svc
}
