package reconcile

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestHostnamePublished: a class with a hostname template puts the
// external-dns annotation on each Listener's Service and publishes the
// name first, in the Listener's status and in its pods' PodListeners, with
// the class's preferred address after it.
func TestHostnamePublished(t *testing.T) {
	e, ctx, ns := setup(t)
	c := e.Client
	hostname := &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}

	// LoadBalancer: the name points at the load balancer.
	lbClass := newClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerAllocateNodePorts: ptr.To(false),
		ServiceAnnotations: map[string]string{"team": "kafka"}, Hostname: hostname})
	testenv.Create(t, ctx, c, listener(ns, "bootstrap", lbClass.Name, port("kafka", 9092)))
	want := "bootstrap." + ns + ".kafka.example.com"
	svc := getService(t, ctx, c, ns, "bootstrap", func(s *corev1.Service) error {
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
	waitStatus(t, ctx, c, ns, "bootstrap", func(l *v1alpha1.Listener) error {
		if !reflect.DeepEqual(l.Status.IngressAddresses, wantLB) {
			return fmt.Errorf("addresses %+v, want %+v", l.Status.IngressAddresses, wantLB)
		}
		return nil
	})

	// NodePort, per pod: the pod's entry has the name first, then its
	// node's address, both with the node port.
	n := node(t, ctx, c, ns+"-n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.4.0.1"})
	npClass := newClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, Hostname: hostname})
	claim := listenerClaim(ns, "broker-0", map[string]string{v1alpha1.AnnotationListenerName: "broker-0"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-0", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "main", Image: "example"}},
			Volumes: []corev1.Volume{claimVolume("listener", claim.Name)}},
	}
	testenv.Create(t, ctx, c, listener(ns, "broker-0", npClass.Name, port("kafka", 9092)), claim, pod,
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "broker-0-abc", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "broker-0", LabelName: LabelNameValue}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.1"}, NodeName: ptr.To(n.Name), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		})
	wantHost := "broker-0." + ns + ".kafka.example.com"
	l := waitStatus(t, ctx, c, ns, "broker-0", func(l *v1alpha1.Listener) error {
		if len(l.Status.IngressAddresses) != 2 || l.Status.IngressAddresses[0].Address != wantHost || l.Status.IngressAddresses[1].Address != "10.4.0.1" {
			return fmt.Errorf("addresses %+v, want %s then 10.4.0.1", l.Status.IngressAddresses, wantHost)
		}
		return nil
	})
	getService(t, ctx, c, ns, "broker-0", func(s *corev1.Service) error {
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
	svc, _, err := desiredService(l, class)
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.GetAnnotations()[v1alpha1.AnnotationExternalDNSHostname]; got != "web.shop.example.com" {
		t.Errorf("annotation %q, want the class's web.shop.example.com", got)
	}
}
