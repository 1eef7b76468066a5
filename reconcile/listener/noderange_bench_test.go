package listener

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// BenchmarkRangeAsk is what one Service write in a range costs besides the
// write: reading what the range's Services hold (rangeAskOf, one index
// lookup per 128 ports of the range) and choosing
// the ports (nodeports.Ask.NodePorts), for a class of 2,000 Listeners in 50
// namespaces, each holding 2 ports of a 4,096-port range. The reader
// hands out deep copies from maps, as the cache does (the fake client's
// JSON round trips would cost ten times more than what is measured).
func BenchmarkRangeAsk(b *testing.B) {
	rng := v1alpha1.NodePortRange{From: 30000, To: 34095}
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "kafka"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodePortRange: &rng}}
	cache := &copyingReader{services: map[client.ObjectKey]*corev1.Service{}, byBlock: map[string][]*corev1.Service{}}
	for i := range 2000 {
		ns, name := fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("broker-%d", i)
		l := reconciletest.Listener(ns, name, class.Name, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093))
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "a", Port: 9092, NodePort: rng.From + int32(2*i)}, {Name: "b", Port: 9093, NodePort: rng.From + int32(2*i+1)}}}}
		cache.listeners = append(cache.listeners, *l)
		cache.services[client.ObjectKeyFromObject(svc)] = svc
		for _, p := range lookup.NodePortBlocks(svc) {
			cache.byBlock[p] = append(cache.byBlock[p], svc)
		}
	}
	r := &listenerReconciler{client: cache, recorder: events.NewFakeRecorder(1)}
	l := reconciletest.Listener("ns-0", "new", class.Name, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093))
	want, _, err := service.Desired(l, class, "", service.CarriedBy(l, nil))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ask, err := r.rangeAskOf(b.Context(), l, class, nil, want)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ask.NodePorts(); err != nil {
			b.Fatal(err)
		}
	}
}

// copyingReader holds one class's Listeners and their Services and hands
// out deep copies, as the cache does; it serves rangeAskOf's reads only,
// Services by block of node ports as the cache's index does.
type copyingReader struct {
	client.Client
	listeners []v1alpha1.Listener
	services  map[client.ObjectKey]*corev1.Service
	// byBlock files the Services by block of node ports, as lookup.IndexServiceNodePortBlock.
	byBlock map[string][]*corev1.Service
}

func (c *copyingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	out, isService := obj.(*corev1.Service)
	svc, ok := c.services[key]
	if !isService || !ok {
		return apierrors.NewNotFound(corev1.Resource("services"), key.Name) // claims: the new Listener has none
	}
	svc.DeepCopyInto(out)
	return nil
}

func (c *copyingReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if svcs, ok := list.(*corev1.ServiceList); ok {
		o := (&client.ListOptions{}).ApplyOptions(opts)
		block, _ := o.FieldSelector.RequiresExactMatch(lookup.IndexServiceNodePortBlock)
		for _, svc := range c.byBlock[block] {
			svcs.Items = append(svcs.Items, *svc.DeepCopy())
		}
		return nil
	}
	out, ok := list.(*v1alpha1.ListenerList)
	if !ok {
		return nil // claims: the new Listener has none
	}
	for i := range c.listeners {
		out.Items = append(out.Items, *c.listeners[i].DeepCopy())
	}
	return nil
}
