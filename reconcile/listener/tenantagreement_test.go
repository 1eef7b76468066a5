package listener

import (
	"reflect"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// TestTenantInputAgreement: for each shape of tenant input, the webhook's
// rule (validation.ListenerAgainstClass) refuses exactly the fields the
// reconciler leaves out of the Service it applies (desiredService), and
// warns about exactly the labels the reconciler leaves off it or copies
// only in mode Warn: one rule, asked of both consumers.
func TestTenantInputAgreement(t *testing.T) {
	enforce := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LockedServiceFields: []string{"metadata.labels[tier]"},
		TenantMetadata: &v1alpha1.TenantMetadataPolicy{Labels: []string{"team.example.com/*"}}}}
	warn := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "warn"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP, TenantMetadata: &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn}}}
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		override string
	}{
		{"workload labels", map[string]string{"app": "web", "app.kubernetes.io/component": "broker"}, ""},
		{"exposure and locked labels", map[string]string{"lbipam.cilium.io/pool": "public", "tier": "gold", "team.example.com/x": "y"}, ""},
		{"labels off the list", map[string]string{"example.com/owner": "a"}, ""},
		{"override off the list", nil, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"oci.oraclecloud.com/load-balancer-type":"nlb"}}}`},
		{"override adding a port", nil, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"http","port":80},{"name":"x","port":81}]}}`},
		{"override of exposure", nil, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"service.kubernetes.io/headless":""}},"spec":{"externalIPs":["203.0.113.1"]}}`},
	} {
		for _, class := range []*v1alpha1.ListenerClass{enforce, warn} {
			t.Run(tc.name+"/"+class.Name, func(t *testing.T) {
				l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: tc.labels},
					Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class.Name), Ports: []v1alpha1.ListenerPort{reconciletest.Port("http", 80)}}}
				if tc.override != "" {
					l.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: []byte(tc.override)}}
				}
				errs, warnings := validation.ListenerAgainstClass(l, class, service.Carried{})
				_, found, err := desiredService(l, class, "", nil)
				if err != nil {
					t.Fatal(err)
				}
				var refused, webhookRefused []string
				for _, e := range found.refused {
					refused = append(refused, e.Field)
				}
				for _, e := range errs {
					webhookRefused = append(webhookRefused, e.Field)
				}
				if !reflect.DeepEqual(refused, webhookRefused) {
					t.Errorf("the webhook refuses %v, the reconciler leaves out %v", webhookRefused, refused)
				}
				if n := len(found.leftOut) + len(found.tolerated); n != len(warnings) {
					t.Errorf("the webhook warns %d times (%v), the reconciler reports %d keys", len(warnings), warnings, n)
				}
			})
		}
	}
}
