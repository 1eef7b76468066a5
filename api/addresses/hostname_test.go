package addresses

import (
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestRenderHostname(t *testing.T) {
	for _, tc := range []struct {
		template, listener, namespace string
		want, wantErr                 string
	}{
		{"{listener}.{namespace}.kafka.example.com", "broker-0", "team-a", "broker-0.team-a.kafka.example.com", ""},
		{"{namespace}-{listener}.example.com", "web", "shop", "shop-web.example.com", ""},
		{"{listener}.{namespace}.example.com", strings.Repeat("a", 64), "ns", "", "label \"" + strings.Repeat("a", 64) + "\" is longer than 63 characters"},
		{"{listener}.{namespace}." + strings.Repeat("x.", 125) + "com", "a.b", "ns", "", "must be no more than 253 characters"},
	} {
		got, err := RenderHostname(&v1alpha1.HostnamePolicy{Template: tc.template}, tc.listener, tc.namespace)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("RenderHostname(%q, %q, %q) = %q, %v; want %q, error containing %q", tc.template, tc.listener, tc.namespace, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestWithHostname(t *testing.T) {
	ports := map[string]int32{"kafka": 31092}
	node := v1alpha1.ListenerIngress{Address: "10.0.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: ports}
	host := v1alpha1.ListenerIngress{Address: "b.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: ports}
	for _, tc := range []struct {
		name  string
		host  string
		addrs []v1alpha1.ListenerIngress
		want  []v1alpha1.ListenerIngress
	}{
		{"no hostname", "", []v1alpha1.ListenerIngress{node}, []v1alpha1.ListenerIngress{node}},
		{"no address yet: nothing to resolve to", "b.example.com", nil, nil},
		{"first, with the ports of the first address", "b.example.com", []v1alpha1.ListenerIngress{node}, []v1alpha1.ListenerIngress{host, node}},
		{"once", "b.example.com", []v1alpha1.ListenerIngress{node, host}, []v1alpha1.ListenerIngress{host, node}},
	} {
		if got := WithHostname(tc.host, tc.addrs); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: WithHostname = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
