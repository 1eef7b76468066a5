package listener

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestHostnamePublished: a class with a hostname template puts the
// external-dns annotation on each Listener's Service and publishes the
// name first, in the Listener's status and in its pods' PodListeners, with
// the class's preferred address after it.
func TestHostnamePublished(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	hostname := &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}

	// LoadBalancer: the name points at the load balancer.
	lbClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerAllocateNodePorts: ptr.To(false),
		ServiceAnnotations: map[string]string{"team": "kafka"}, Hostname: hostname})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "bootstrap", lbClass.Name, reconciletest.Port("kafka", 9092)))
	want := "bootstrap." + ns + ".kafka.example.com"
	svc := reconciletest.GetService(t, ctx, c, ns, "bootstrap", func(s *corev1.Service) error {
		if s.Annotations[v1alpha1.AnnotationExternalDNSHostname] != want || s.Annotations["team"] != "kafka" {
			return fmt.Errorf("annotations %v, want %s=%s next to the class's", s.Annotations, v1alpha1.AnnotationExternalDNSHostname, want)
		}
		return nil
	})
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	ports := map[string]int32{"kafka": 9092}
	wantLB := []v1alpha1.ListenerIngress{
		{Address: want, AddressType: v1alpha1.AddressTypeHostname, Ports: ports},
		{Address: "198.51.100.7", AddressType: v1alpha1.AddressTypeIP, Ports: ports},
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "bootstrap", func(l *v1alpha1.Listener) error {
		if !reflect.DeepEqual(l.Status.IngressAddresses, wantLB) {
			return fmt.Errorf("addresses %+v, want %+v", l.Status.IngressAddresses, wantLB)
		}
		return nil
	})

	// NodePort, per pod: the pod's entry has the name first, then its
	// node's address, both with the node port.
	n := reconciletest.Node(t, ctx, c, ns+"-n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.4.0.1"})
	npClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, Hostname: hostname})
	claim := reconciletest.ListenerClaim(ns, "broker-0", map[string]string{v1alpha1.AnnotationListenerName: "broker-0"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-0", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "main", Image: "example"}},
			Volumes: []corev1.Volume{reconciletest.ClaimVolume("listener", claim.Name)}},
	}
	// The pod is bound to n1: the Listener publishes n1 (podNodes).
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "broker-0", npClass.Name, reconciletest.Port("kafka", 9092)), claim, pod)
	wantHost := "broker-0." + ns + ".kafka.example.com"
	l := reconciletest.WaitStatus(t, ctx, c, ns, "broker-0", func(l *v1alpha1.Listener) error {
		if len(l.Status.IngressAddresses) != 2 || l.Status.IngressAddresses[0].Address != wantHost || l.Status.IngressAddresses[1].Address != "10.4.0.1" {
			return fmt.Errorf("addresses %+v, want %s then 10.4.0.1", l.Status.IngressAddresses, wantHost)
		}
		return nil
	})
	reconciletest.GetService(t, ctx, c, ns, "broker-0", func(s *corev1.Service) error {
		if s.Annotations[v1alpha1.AnnotationExternalDNSHostname] != wantHost {
			return fmt.Errorf("annotations %v", s.Annotations)
		}
		return nil
	})
	wantPod := v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeNode, IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: wantHost, AddressType: v1alpha1.AddressTypeHostname, Ports: l.Status.NodePorts},
		{Address: "10.4.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: l.Status.NodePorts},
	}}
	testenv.Converges(t, "podlisteners with the hostname", func() error {
		pl := &v1alpha1.PodListeners{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.PodListenersName(pod.UID)}, pl); err != nil {
			return err
		}
		if got := pl.Spec.Listeners["listener"]; !reflect.DeepEqual(got, wantPod) {
			return fmt.Errorf("entry %+v, want %+v", got, wantPod)
		}
		return nil
	})
}

// TestHostnameBeatsOverrides: a Listener's objectOverrides cannot point the
// class's DNS name elsewhere.
func TestHostnameBeatsOverrides(t *testing.T) {
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: v1alpha1.ListenerSpec{
		Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}},
		ObjectOverrides: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop","annotations":{"` +
			v1alpha1.AnnotationExternalDNSHostname + `":"bank.example.com"}}}`)}},
	}}
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.example.com"}}}
	svc, _, err := desiredService(l, class, addresses.Hostname(&class.Spec, l.Name, l.Namespace), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.GetAnnotations()[v1alpha1.AnnotationExternalDNSHostname]; got != "web.shop.example.com" {
		t.Errorf("annotation %q, want the class's web.shop.example.com", got)
	}
}

// TestHostnameTooLongForOneListener: a template admitted for the class can
// still render a name too long for DNS for a particular Listener. That
// Listener stays Ready with its other addresses, gets no hostname and no
// external-dns annotation, and a condition and an event that name the
// class, the rendered length, the limit and the fix; a Listener whose name
// fits gets its hostname and HostnamePublished True.
func TestHostnameTooLongForOneListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	long := func(n int) string { return strings.Repeat("x", n) }
	// Up to 200 characters after the namespace: fine for short names.
	suffix := strings.Repeat("example.", 20) + "test"
	for _, tc := range []struct {
		name     string
		template string
		listener string
		// wantLength and wantLimit are in the message ("%d characters",
		// "the %d"); 0 means the name fits.
		wantLength, wantLimit int
	}{
		{name: "fits", template: "{listener}.{namespace}." + suffix, listener: "web"},
		{name: "name over 253", template: "{listener}.{namespace}." + suffix, listener: long(60) + "." + long(60),
			wantLength: 121 + 1 + len(ns) + 1 + len(suffix), wantLimit: 253},
		{name: "label over 63", template: "{listener}-{namespace}.example.test", listener: long(60),
			wantLength: 60 + 1 + len(ns), wantLimit: 63},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressHostname,
				Hostname: &v1alpha1.HostnamePolicy{Template: tc.template}})
			testenv.Create(t, ctx, c, reconciletest.Listener(ns, tc.listener, class.Name, reconciletest.Port("http", 80)))
			host, _ := addresses.RenderHostname(class.Spec.Hostname, tc.listener, ns)
			l := reconciletest.WaitStatus(t, ctx, c, ns, tc.listener, func(l *v1alpha1.Listener) error {
				cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
				if _, ready := reconciletest.ReadyReason(l); !ready || cond == nil || len(l.Status.IngressAddresses) == 0 {
					return fmt.Errorf("conditions %+v, addresses %+v; want Ready and HostnamePublished", l.Status.Conditions, l.Status.IngressAddresses)
				}
				return nil
			})
			cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
			svc := reconciletest.GetService(t, ctx, c, ns, l.Status.ServiceName, nil)
			annotation, annotated := svc.Annotations[v1alpha1.AnnotationExternalDNSHostname]
			if tc.wantLength == 0 {
				if cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonHostnamePublished || l.Status.IngressAddresses[0].Address != host || annotation != host {
					t.Errorf("condition %+v, first address %s, annotation %q; want HostnamePublished True, %s first and annotated", cond, l.Status.IngressAddresses[0].Address, annotation, host)
				}
				return
			}
			if cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonHostnameTooLong {
				t.Errorf("condition %+v, want HostnamePublished False %s", cond, v1alpha1.ReasonHostnameTooLong)
			}
			for _, want := range []string{"ListenerClass " + class.Name, fmt.Sprintf("%d characters", tc.wantLength), fmt.Sprintf("the %d", tc.wantLimit), "fix: shorten the Listener's name"} {
				if !strings.Contains(cond.Message, want) {
					t.Errorf("condition message %q does not say %q", cond.Message, want)
				}
			}
			if annotated {
				t.Errorf("Service annotated %s=%q, a name that is not a DNS name", v1alpha1.AnnotationExternalDNSHostname, annotation)
			}
			for _, a := range l.Status.IngressAddresses {
				if a.Address == host || len(a.Address) > 253 {
					t.Errorf("address %q published, want none too long for DNS", a.Address)
				}
			}
			if ev := reconciletest.WaitEvent(t, ctx, c, ns, tc.listener, EventHostnameTooLong); ev.Type != corev1.EventTypeWarning || ev.Note != cond.Message {
				t.Errorf("event %s %q, want a Warning saying %q", ev.Type, ev.Note, cond.Message)
			}
		})
	}
}
