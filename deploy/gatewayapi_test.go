package deploy

import (
	"slices"
	"testing"
)

// TestGatewayAPIValue: by default the operator may read Gateways and keep
// TLSRoutes (gateway classes); gatewayAPI.enabled=false leaves both out
// of its ClusterRole and turns the watches off.
func TestGatewayAPIValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"default", nil, true},
		{"off", []string{"gatewayAPI.enabled=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, helm(t, tc.values...))
			role := o.get(t, "ClusterRole", "", "listener-operator")
			for _, c := range []struct{ resource, verb string }{{"gateways", "watch"}, {"tlsroutes", "patch"}, {"tlsroutes", "delete"}} {
				if got := grants(role, "gateway.networking.k8s.io", c.resource, "", c.verb); got != tc.want {
					t.Errorf("%s %s granted: %v, want %v", c.verb, c.resource, got, tc.want)
				}
			}
			if !grants(role, "", "services", "", "create") {
				t.Error("the other rules went too")
			}
			a := args(t, container(t, o.get(t, "Deployment", namespace, "listener-operator"), "manager"))
			if off := slices.Contains(a, "--gateway-api=false"); off == tc.want {
				t.Errorf("args %v, want --gateway-api=false only when off", a)
			}
		})
	}
}
