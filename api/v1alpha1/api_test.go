package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

func TestListenerClassDefaultsRoundTrip(t *testing.T) {
	c := testenv.Require(t, env).Client
	ctx := t.Context()
	lc := &v1alpha1.ListenerClass{
		ObjectMeta: metav1.ObjectMeta{Name: "roundtrip"},
		Spec: v1alpha1.ListenerClassSpec{
			ServiceType:      v1alpha1.ServiceTypeLoadBalancer,
			ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"team":"data"}},"spec":{"futureField":{"kept":true}}}`)},
		},
	}
	if err := c.Create(ctx, lc); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), lc) })

	var got v1alpha1.ListenerClass
	if err := c.Get(ctx, client.ObjectKeyFromObject(lc), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Spec.PreferredAddressType != v1alpha1.PreferredAddressHostnameConservative {
		t.Errorf("preferredAddressType = %q, want default HostnameConservative", got.Spec.PreferredAddressType)
	}
	if !ptr.Deref(got.Spec.LoadBalancerAllocateNodePorts, false) {
		t.Errorf("loadBalancerAllocateNodePorts = %v, want default true", got.Spec.LoadBalancerAllocateNodePorts)
	}
	if got.Spec.PinnedNodePorts == nil || *got.Spec.PinnedNodePorts {
		t.Errorf("pinnedNodePorts = %v, want default false", got.Spec.PinnedNodePorts)
	}
	if got.Spec.ServiceExternalTrafficPolicy != nil {
		t.Errorf("serviceExternalTrafficPolicy = %v, want unset (no default)", *got.Spec.ServiceExternalTrafficPolicy)
	}
	if got.Spec.ServiceOverrides == nil || !strings.Contains(string(got.Spec.ServiceOverrides.Raw), `"futureField":{"kept":true}`) {
		t.Errorf("serviceOverrides lost unknown fields: %s", got.Spec.ServiceOverrides.Raw)
	}
}

func TestListenerDefaultsAndStatusRoundTrip(t *testing.T) {
	c := testenv.Require(t, env).Client
	ctx := t.Context()
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: "roundtrip", Namespace: "default"},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To("external-unstable"),
			Ports:     []v1alpha1.ListenerPort{{Name: "http", Port: 8080}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}},
			ObjectOverrides: []runtime.RawExtension{{Raw: []byte(
				`{"apiVersion":"v1","kind":"Service","metadata":{"name":"roundtrip","annotations":{"winner":"listener"}}}`)}},
		},
	}
	if err := c.Create(ctx, l); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), l) })
	if l.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports[0].protocol = %q, want default TCP", l.Spec.Ports[0].Protocol)
	}
	if !ptr.Deref(l.Spec.PublishNotReadyAddresses, false) {
		t.Errorf("publishNotReadyAddresses = %v, want default true", l.Spec.PublishNotReadyAddresses)
	}
	if len(l.Spec.ObjectOverrides) != 1 || !strings.Contains(string(l.Spec.ObjectOverrides[0].Raw), `"winner":"listener"`) {
		t.Errorf("objectOverrides not kept: %v", l.Spec.ObjectOverrides)
	}

	// Status is a subresource: a spec update must not write it, the status
	// client must.
	l.Status = v1alpha1.ListenerStatus{
		ServiceName: "roundtrip",
		ServiceType: v1alpha1.ServiceTypeNodePort,
		IngressAddresses: []v1alpha1.ListenerIngress{
			{Address: "10.0.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 31080}},
		},
		NodePorts: map[string]int32{"http": 31080},
	}
	meta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady})
	if err := c.Status().Update(ctx, l); err != nil {
		t.Fatalf("update status: %v", err)
	}
	var got v1alpha1.Listener
	if err := c.Get(ctx, client.ObjectKeyFromObject(l), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(got.Status.IngressAddresses) != 1 || got.Status.IngressAddresses[0].Ports["http"] != 31080 {
		t.Errorf("status.ingressAddresses = %+v, want 10.0.0.1 with http=31080", got.Status.IngressAddresses)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("status.conditions = %+v, want Ready=True", got.Status.Conditions)
	}

	// kubectl shows the printer columns a user relies on.
	out, err := env.Kubectl(ctx, nil, "get", "listeners", "-n", "default", "roundtrip")
	if err != nil {
		t.Fatalf("kubectl get listeners: %v: %s", err, out)
	}
	for _, want := range []string{"CLASS", "SERVICE TYPE", "ADDRESS", "PORTS", "external-unstable", "NodePort", "10.0.0.1", "31080"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get listeners output lacks %q:\n%s", want, out)
		}
	}
}

func TestPodListenersRoundTrip(t *testing.T) {
	c := testenv.Require(t, env).Client
	ctx := t.Context()
	pl := &v1alpha1.PodListeners{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-0b5c1a9e-8f6e-4c55-a0a4-7d5b2d9d9c11", Namespace: "default"},
		Spec: v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{
			"listener": {Scope: v1alpha1.PodListenerScopeNode, IngressAddresses: []v1alpha1.ListenerIngress{
				{Address: "node-1.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 30092}},
			}},
		}},
	}
	if err := c.Create(ctx, pl); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), pl) })
	var got v1alpha1.PodListeners
	if err := c.Get(ctx, client.ObjectKeyFromObject(pl), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if l := got.Spec.Listeners["listener"]; l.Scope != v1alpha1.PodListenerScopeNode || len(l.IngressAddresses) != 1 || l.IngressAddresses[0].Ports["kafka"] != 30092 {
		t.Errorf("spec.listeners[listener] = %+v", l)
	}
}

// TestSchemaRejections checks that the API server itself refuses invalid
// objects with a message naming the field, even with no webhook running.
func TestSchemaRejections(t *testing.T) {
	c := testenv.Require(t, env).Client
	port := func(name string, n int32, proto corev1.Protocol) v1alpha1.ListenerPort {
		return v1alpha1.ListenerPort{Name: name, Port: n, Protocol: proto}
	}
	listener := func(ports ...v1alpha1.ListenerPort) client.Object {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: "default"}, Spec: v1alpha1.ListenerSpec{Ports: ports}}
	}
	class := func(spec v1alpha1.ListenerClassSpec) client.Object {
		return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: spec}
	}
	tests := []struct {
		name string
		obj  client.Object
		want []string // substrings of the API server's message
	}{
		{"unknown service type", class(v1alpha1.ListenerClassSpec{ServiceType: "ExternalName"}),
			[]string{`spec.serviceType: Unsupported value: "ExternalName"`, `"ClusterIP", "NodePort", "LoadBalancer"`}},
		{"missing service type", class(v1alpha1.ListenerClassSpec{}),
			[]string{`spec.serviceType: Unsupported value: ""`}},
		{"unknown address preference", class(v1alpha1.ListenerClassSpec{ServiceType: "NodePort", PreferredAddressType: "FQDN"}),
			[]string{`spec.preferredAddressType: Unsupported value: "FQDN"`}},
		{"unknown traffic policy", class(v1alpha1.ListenerClassSpec{ServiceType: "NodePort", ServiceExternalTrafficPolicy: ptr.To(v1alpha1.TrafficPolicy("Nearest"))}),
			[]string{`spec.serviceExternalTrafficPolicy: Unsupported value: "Nearest"`}},
		{"port zero", listener(port("http", 0, "")),
			[]string{"spec.ports[0].port: Invalid value: 0", "should be greater than or equal to 1"}},
		{"port too large", listener(port("http", 70000, "")),
			[]string{"spec.ports[0].port: Invalid value: 70000", "should be less than or equal to 65535"}},
		// The value is JSON since 1.34, a Go map before (make test-compat).
		{"duplicate port names", listener(port("http", 80, ""), port("http", 8080, "")),
			[]string{`spec.ports[1]: Duplicate value: `, `"name":"http"`}},
		{"port name not a DNS label", listener(port("HTTP_Port", 80, "")),
			[]string{`spec.ports[0].name: Invalid value: "HTTP_Port"`}},
		{"unknown protocol", listener(port("http", 80, "HTTP")),
			[]string{`spec.ports[0].protocol: Unsupported value: "HTTP"`}},
		{"101 ports", listener(manyPorts(101)...),
			[]string{"spec.ports: Too many: 101: must have at most 100 items"}},
		{"33 object overrides", &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: "default"}, Spec: v1alpha1.ListenerSpec{ObjectOverrides: manyOverrides(33)}},
			[]string{"spec.objectOverrides: Too many: 33: must have at most 32 items"}},
		{"unknown pod listener scope", &v1alpha1.PodListeners{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-", Namespace: "default"},
			Spec:       v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"listener": {Scope: "Zone"}}},
		}, []string{`spec.listeners.listener.scope: Unsupported value: "Zone"`}},
		{"unknown address type", &v1alpha1.PodListeners{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-", Namespace: "default"},
			Spec: v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"listener": {Scope: "Cluster",
				IngressAddresses: []v1alpha1.ListenerIngress{{Address: "a", AddressType: "Email"}}}}},
		}, []string{`spec.listeners.listener.ingressAddresses[0].addressType: Unsupported value: "Email"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(t.Context(), tt.obj)
			if err == nil {
				_ = c.Delete(context.Background(), tt.obj)
				t.Fatalf("created %s, want the API server to refuse it", tt.name)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error = %v, want an Invalid error", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func manyPorts(n int) []v1alpha1.ListenerPort {
	ports := make([]v1alpha1.ListenerPort, n)
	for i := range ports {
		ports[i] = v1alpha1.ListenerPort{Name: fmt.Sprintf("p%d", i), Port: int32(1000 + i)}
	}
	return ports
}

func manyOverrides(n int) []runtime.RawExtension {
	o := make([]runtime.RawExtension, n)
	for i := range o {
		o[i] = runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}`)}
	}
	return o
}
