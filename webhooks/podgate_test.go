package webhooks

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// gatedClass is a class whose pods get the readiness gate, made once per
// test process (classes are cluster-wide).
const gatedClass = "wh-gated"

func createGatedClass(t testing.TB) {
	t.Helper()
	e := testenv.Require(t, env)
	gate := v1alpha1.PodReadinessGate
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: gatedClass},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PodReadiness: &gate}}
	if err := e.Client.Create(t.Context(), class); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	eventually(t, "the gated class in the webhooks' cache", func() error {
		if !testLookup.gatingClasses.Has(gatedClass) {
			return errorf("not yet")
		}
		return nil
	})
}

// TestPodReadinessGate: a pod gets the readiness gate once when a
// listener volume's class (its own, or its shared Listener's) gates pods,
// and no patch it did not get before otherwise; a class that cannot be
// told at admission adds none.
func TestPodReadinessGate(t *testing.T) {
	e := testenv.Require(t, env)
	createGatedClass(t)
	ns := namespace(t, nil)
	sc := ptr(v1alpha1.StorageClassName)
	for _, o := range []client.Object{
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated-shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(gatedClass)}},
		listenerClaim(ns, "own", map[string]string{v1alpha1.AnnotationListenerClass: gatedClass}, sc),
		listenerClaim(ns, "shared", map[string]string{v1alpha1.AnnotationListenerName: "gated-shared"}, sc),
		listenerClaim(ns, "plain", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, sc),
		listenerClaim(ns, "missing-listener", map[string]string{v1alpha1.AnnotationListenerName: "not-yet"}, sc),
	} {
		if err := e.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	withGate := pod(ns, "has-gate", nil, claimVolume("l", "own"))
	withGate.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/other"}, {ConditionType: v1alpha1.PodConditionAddressesReady}}
	gate := v1alpha1.PodConditionAddressesReady
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"claim of a gated class", pod(ns, "own", nil, claimVolume("l", "own")), gate},
		{"claim of a gated class's shared Listener", pod(ns, "shared", nil, claimVolume("l", "shared")), gate},
		{"ephemeral volume of a gated class", pod(ns, "eph", nil, ephemeral("l", map[string]string{v1alpha1.AnnotationListenerClass: gatedClass})), gate},
		{"opted-in bare pod of a gated class", func() *corev1.Pod {
			p := pod(ns, "bare", optIn)
			p.Annotations = map[string]string{v1alpha1.AnnotationListenerClass: gatedClass}
			return p
		}(), gate},
		{"one gated volume among others", pod(ns, "mixed", nil, claimVolume("a", "plain"), claimVolume("b", "own")), gate},
		{"the gate already there: not twice", withGate, "example.com/other " + gate},
		{"claim of a class without the gate", pod(ns, "plain", nil, claimVolume("l", "plain")), ""},
		{"shared Listener that does not exist yet", pod(ns, "early", nil, claimVolume("l", "missing-listener")), ""},
		{"no listener volume", pod(ns, "none", nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Client.Create(t.Context(), tc.pod); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got corev1.Pod
			if err := e.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: tc.pod.Name}, &got); err != nil {
				t.Fatal(err)
			}
			var gates []string
			for _, g := range got.Spec.ReadinessGates {
				gates = append(gates, string(g.ConditionType))
			}
			if s := strings.Join(gates, " "); s != tc.want {
				t.Errorf("readiness gates %q, want %q", s, tc.want)
			}
		})
	}
}
