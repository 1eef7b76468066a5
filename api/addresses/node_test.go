package addresses

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func node(addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{Status: corev1.NodeStatus{Addresses: addrs}}
}

func TestNodeIngress(t *testing.T) {
	ext := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}
	ext2 := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.8"}
	in := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}
	in6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::7"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-7"}
	host2 := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-7b"}
	ports := map[string]int32{"http": 30080}
	ip := v1alpha1.AddressTypeIP
	hn := v1alpha1.AddressTypeHostname
	tests := []struct {
		name     string
		node     *corev1.Node
		pref     v1alpha1.AddressType
		want     string
		wantType v1alpha1.AddressType
		wantOK   bool
	}{
		{"IP preferred: external beats internal", node(in, ext, host), ip, "203.0.113.7", ip, true},
		{"IP preferred: first external wins", node(ext, ext2), ip, "203.0.113.7", ip, true},
		{"IP preferred: internal when no external", node(host, in, in6), ip, "10.0.0.7", ip, true},
		{"IP preferred: falls back to hostname", node(host), ip, "node-7", hn, true},
		{"hostname preferred", node(in, host, host2), hn, "node-7", hn, true},
		{"hostname preferred: falls back to external IP", node(in, ext), hn, "203.0.113.7", ip, true},
		{"hostname preferred: falls back to internal IP", node(in6), hn, "fd00::7", ip, true},
		{"no addresses", node(), ip, "", "", false},
		{"no addresses, hostname preferred", node(), hn, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ings, _ := NodeRule{Pref: tt.pref}.Ingress(tt.node, ports)
			if ok := len(ings) == 1; ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !tt.wantOK {
				return
			}
			if got := ings[0]; got.Address != tt.want || got.AddressType != tt.wantType || !reflect.DeepEqual(got.Ports, ports) {
				t.Errorf("Ingress = %+v, want %s (%s) with %v", got, tt.want, tt.wantType, ports)
			}
		})
	}
}

func TestEffectiveAddressType(t *testing.T) {
	tests := []struct {
		svc  v1alpha1.ServiceType
		pref v1alpha1.PreferredAddressType
		want v1alpha1.AddressType
	}{
		{v1alpha1.ServiceTypeNodePort, v1alpha1.PreferredAddressHostnameConservative, v1alpha1.AddressTypeIP},
		{v1alpha1.ServiceTypeNodePort, "", v1alpha1.AddressTypeIP},
		{v1alpha1.ServiceTypeClusterIP, v1alpha1.PreferredAddressHostnameConservative, v1alpha1.AddressTypeHostname},
		{v1alpha1.ServiceTypeLoadBalancer, v1alpha1.PreferredAddressHostnameConservative, v1alpha1.AddressTypeHostname},
		{v1alpha1.ServiceTypeNodePort, v1alpha1.PreferredAddressHostname, v1alpha1.AddressTypeHostname},
		{v1alpha1.ServiceTypeClusterIP, v1alpha1.PreferredAddressIP, v1alpha1.AddressTypeIP},
	}
	for _, tt := range tests {
		spec := v1alpha1.ListenerClassSpec{ServiceType: tt.svc, PreferredAddressType: tt.pref}
		if got := spec.EffectiveAddressType(); got != tt.want {
			t.Errorf("%s/%s: EffectiveAddressType = %s, want %s", tt.svc, tt.pref, got, tt.want)
		}
	}
}

func TestSort(t *testing.T) {
	in := []v1alpha1.ListenerIngress{
		{Address: "b", AddressType: v1alpha1.AddressTypeHostname},
		{Address: "10.0.0.2", AddressType: v1alpha1.AddressTypeIP},
		{Address: "a", AddressType: v1alpha1.AddressTypeHostname},
		{Address: "10.0.0.2", AddressType: v1alpha1.AddressTypeIP},
	}
	got := Sort(in)
	want := []string{"10.0.0.2", "a", "b"}
	if len(got) != len(want) {
		t.Fatalf("Sort = %+v, want addresses %v", got, want)
	}
	for i := range want {
		if got[i].Address != want[i] {
			t.Errorf("Sort[%d] = %s, want %s", i, got[i].Address, want[i])
		}
	}
}
