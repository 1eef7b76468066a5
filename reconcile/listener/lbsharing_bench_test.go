package listener

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// BenchmarkServicesOfKey is what finding the Services of one sharing key
// costs a reconcile of a sharing Listener (servicesOfKey), read from the
// reconcilers' cache of a real API server, in a namespace of 1,000 of the
// operator's Services, 3 of them of the key.
func BenchmarkServicesOfKey(b *testing.B) {
	e := testenv.Require(b, reconciletest.Env)
	ctx := b.Context()
	ns := benchNamespace(b, e.Client)
	for i := range 1000 {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%d", i),
			Labels: map[string]string{v1alpha1.LabelServiceKind: v1alpha1.LabelServiceKindValue}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
		if i%333 == 0 {
			svc.Annotations = map[string]string{v1alpha1.AnnotationMetalLBSharedIP: "kafka"}
		}
		if err := e.Client.Create(ctx, svc); err != nil {
			b.Fatal(err)
		}
	}
	r := &listenerReconciler{client: reconciletest.LeaderClient}
	testenv.Eventually(b, testenv.WaitFor, "the cache holds the Services", func() error {
		var list corev1.ServiceList
		if err := reconciletest.LeaderClient.List(ctx, &list); err != nil || len(list.Items) < 1000 {
			return fmt.Errorf("%d Services cached (%v)", len(list.Items), err)
		}
		return nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := r.servicesOfKey(ctx, ns, "kafka", "svc-0")
		if err != nil || len(got) != 3 {
			b.Fatalf("%d Services of the key, want 3 (%v)", len(got), err)
		}
	}
}
