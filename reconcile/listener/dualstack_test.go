package listener

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestDualStackNodePort: a class that prefers IPv6 first gets dual-stack
// Services (the test API server has both families), and its NodePort
// Listener publishes, per node, the address of each family of its Service,
// IPv6 first; a node behind NAT (nodeAddress: Annotation) is published at
// its annotated addresses, and a bad entry draws an event.
func TestDualStackNodePort(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	n := reconciletest.Node(t, ctx, c, ns+"-n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.1"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00:1::1"})
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack), IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol},
		NodeAddress: v1alpha1.NodeAddressAnnotation})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "np", class.Name, reconciletest.Port("http", 80)))
	claim := reconciletest.ListenerClaim(ns, "np-a", map[string]string{v1alpha1.AnnotationListenerName: "np"})
	testenv.Create(t, ctx, c, claim)
	reconciletest.ServingPod(t, ctx, c, ns, "np-0", n.Name, true, claim.Name)

	svc := reconciletest.GetService(t, ctx, c, ns, "np", nil)
	if want := []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}; !reflect.DeepEqual(svc.Spec.IPFamilies, want) {
		t.Fatalf("Service families %v, want %v", svc.Spec.IPFamilies, want)
	}
	addrs := func(want ...string) func(*v1alpha1.Listener) error {
		return func(l *v1alpha1.Listener) error {
			var got []string
			for _, a := range l.Status.IngressAddresses {
				got = append(got, a.Address)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(l.Status.IPFamilies, svc.Spec.IPFamilies) {
				return fmt.Errorf("addresses %v families %v, want %v and %v", got, l.Status.IPFamilies, want, svc.Spec.IPFamilies)
			}
			return nil
		}
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("fd00:1::1", "10.1.0.1"))

	// The administrator annotates the node: its NAT addresses win; a bad
	// entry is skipped with an event.
	n.Annotations = map[string]string{v1alpha1.AnnotationNodeAddress: "198.51.100.1, 2001:db8::1, not_a_name"}
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("2001:db8::1", "198.51.100.1"))
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "np", v1alpha1.EventNodeAddressInvalid)
	if want := `"not_a_name": neither an IP address nor a DNS name`; !strings.Contains(ev.Note, want) || !strings.Contains(ev.Note, n.Name) {
		t.Errorf("event %q, want it to name the node and say %q", ev.Note, want)
	}
}
