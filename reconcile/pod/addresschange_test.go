package pod

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestRecordAddressChanges(t *testing.T) {
	ing := func(addrs ...string) []v1alpha1.ListenerIngress {
		var out []v1alpha1.ListenerIngress
		for _, a := range addrs {
			out = append(out, v1alpha1.ListenerIngress{Address: a, AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 80}})
		}
		return out
	}
	entry := func(now, start []v1alpha1.ListenerIngress) v1alpha1.PodListener {
		return v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: now, AddressesAtStart: start}
	}
	spec := func(entries map[string]v1alpha1.PodListener) v1alpha1.PodListenersSpec {
		return v1alpha1.PodListenersSpec{Listeners: entries}
	}
	for _, tc := range []struct {
		name        string
		old, cur    v1alpha1.PodListenersSpec
		want        v1alpha1.PodListenersSpec
		wantChanged []string
	}{
		{name: "first write: nothing to compare",
			old: spec(nil), cur: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			want: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)})},
		{name: "unchanged",
			old:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			cur:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			want: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)})},
		{name: "addresses arrive after an empty first write: not a change",
			old:  spec(map[string]v1alpha1.PodListener{"a": entry(nil, nil)}),
			cur:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			want: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)})},
		{name: "a change records the start",
			old:         spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil), "b": entry(ing("2.2.2.2"), nil)}),
			cur:         spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), nil), "b": entry(ing("2.2.2.2"), nil)}),
			want:        spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), ing("1.1.1.1")), "b": entry(ing("2.2.2.2"), nil)}),
			wantChanged: []string{"a"}},
		{name: "a recorded change stays, without a new signal",
			old:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), ing("1.1.1.1"))}),
			cur:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), nil)}),
			want: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), ing("1.1.1.1"))})},
		{name: "a second change keeps the start and signals again",
			old:         spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), ing("1.1.1.1"))}),
			cur:         spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.10"), nil)}),
			want:        spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.10"), ing("1.1.1.1"))}),
			wantChanged: []string{"a"}},
		{name: "back to the start: the record goes",
			old:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.9"), ing("1.1.1.1"))}),
			cur:  spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			want: spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)})},
		{name: "a new port number is a change",
			old:         spec(map[string]v1alpha1.PodListener{"a": entry(ing("1.1.1.1"), nil)}),
			cur:         spec(map[string]v1alpha1.PodListener{"a": entry([]v1alpha1.ListenerIngress{{Address: "1.1.1.1", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 81}}}, nil)}),
			want:        spec(map[string]v1alpha1.PodListener{"a": entry([]v1alpha1.ListenerIngress{{Address: "1.1.1.1", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 81}}}, ing("1.1.1.1"))}),
			wantChanged: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := recordAddressChanges(tc.old, tc.cur)
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(changed, tc.wantChanged) {
				t.Errorf("got %+v, changed %v; want %+v, %v", got, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

// TestAddressChangeSignal: a LoadBalancer's ingress changes under running
// pods; each pod gets an event and its PodListeners records what it
// started with and what it would read now; the pod of a class that asks
// for restarts is evicted.
func TestAddressChangeSignal(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	spec := func(restart *bool) v1alpha1.ListenerClassSpec {
		s := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerAllocateNodePorts: ptr.To(false)}
		if restart != nil {
			s.AddressChange = &v1alpha1.AddressChangePolicy{RestartPods: restart}
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		restart *bool
		pdb     bool
	}{
		{name: "signal", restart: nil},
		{name: "restart", restart: ptr.To(true)},
		{name: "pdb", restart: ptr.To(true), pdb: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := reconciletest.NewClass(t, ctx, c, spec(tc.restart))
			lis := "lb-" + tc.name
			claim := reconciletest.ListenerClaim(ns, lis+"-claim", map[string]string{v1alpha1.AnnotationListenerName: lis})
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "broker-" + tc.name, Namespace: ns, Labels: map[string]string{"app": tc.name}},
				Spec: corev1.PodSpec{
					NodeName:   "some-node",
					Containers: []corev1.Container{{Name: "main", Image: "example"}},
					Volumes:    []corev1.Volume{reconciletest.ClaimVolume("listener", claim.Name)},
				},
			}
			testenv.Create(t, ctx, c, reconciletest.Listener(ns, lis, class.Name, reconciletest.Port("tls", 9093)), claim, pod)
			if tc.pdb {
				// A running, ready pod: the Eviction API ignores budgets
				// for pods that are not running yet.
				pod.Status.Phase = corev1.PodRunning
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				if err := c.Status().Update(ctx, pod); err != nil {
					t.Fatal(err)
				}
				testenv.Create(t, ctx, c, &policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
					Spec: policyv1.PodDisruptionBudgetSpec{
						MaxUnavailable: ptr.To(intstr.FromInt32(0)),
						Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": tc.name}},
					},
				})
			}
			svc := reconciletest.GetService(t, ctx, c, ns, lis, nil)
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
			if err := c.Status().Update(ctx, svc); err != nil {
				t.Fatal(err)
			}
			start := []v1alpha1.ListenerIngress{{Address: "198.51.100.7", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"tls": 9093}}}
			now := []v1alpha1.ListenerIngress{{Address: "198.51.100.9", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"tls": 9093}}}
			pl := &v1alpha1.PodListeners{}
			waitPodListener := func(what string, want v1alpha1.PodListener) {
				t.Helper()
				testenv.Converges(t, what, func() error {
					if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.PodListenersName(pod.UID)}, pl); err != nil {
						return err
					}
					if got := pl.Spec.Listeners["listener"]; !reflect.DeepEqual(got, want) {
						return fmt.Errorf("entry %+v, want %+v", got, want)
					}
					return nil
				})
			}
			waitPodListener("podlisteners at start", v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: start})

			// The load balancer's address changes.
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.9"}}
			if err := c.Status().Update(ctx, svc); err != nil {
				t.Fatal(err)
			}
			waitPodListener("podlisteners record the change", v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: now, AddressesAtStart: start})
			ev := reconciletest.WaitEvent(t, ctx, c, ns, pod.Name, EventAddressChanged)
			if ev.Regarding.Kind != "Pod" || ev.Type != corev1.EventTypeWarning {
				t.Errorf("event %+v, want a Warning about the pod", ev)
			}
			p := &corev1.Pod{}
			err := c.Get(ctx, client.ObjectKeyFromObject(pod), p)
			if tc.restart == nil {
				if err != nil || !p.DeletionTimestamp.IsZero() {
					t.Errorf("pod of a class without restartPods: get %v, deletion %v; want it left running", err, p.DeletionTimestamp)
				}
				return
			}
			if tc.pdb {
				// The budget allows no disruption: the eviction is refused
				// and the pod keeps running.
				reconciletest.WaitEvent(t, ctx, c, ns, pod.Name, EventAddressChangeEvictionRefused)
				if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil || !p.DeletionTimestamp.IsZero() {
					t.Errorf("pod protected by a PodDisruptionBudget: get %v, deletion %v; want it left running", err, p.DeletionTimestamp)
				}
				return
			}
			reconciletest.WaitEvent(t, ctx, c, ns, pod.Name, EventAddressChangeEvicted)
			testenv.Converges(t, "pod evicted", func() error {
				err := c.Get(ctx, client.ObjectKeyFromObject(pod), p)
				if apierrors.IsNotFound(err) || err == nil && !p.DeletionTimestamp.IsZero() {
					return nil
				}
				return fmt.Errorf("pod: %v, deletion %v", err, p.DeletionTimestamp)
			})
		})
	}
}
