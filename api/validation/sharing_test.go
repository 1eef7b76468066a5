package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestSharingFields(t *testing.T) {
	lb := v1alpha1.ServiceTypeLoadBalancer
	rng := &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}
	local, cluster := v1alpha1.TrafficPolicyLocal, v1alpha1.TrafficPolicyCluster
	for _, tt := range []struct {
		name    string
		spec    v1alpha1.ListenerClassSpec
		wantErr string
	}{
		{"a sharing class", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng, ServiceExternalTrafficPolicy: &cluster}, ""},
		{"without sharing, the keys are the class's business", v1alpha1.ListenerClassSpec{ServiceType: lb, ServiceAnnotations: map[string]string{"metallb.io/allow-shared-ip": "all"}}, ""},
		{"from after to", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9099, To: 9000}},
			`spec.loadBalancerSharing: Invalid value: "9099-9000": write from and to between 1 and 65535, from not greater than to`},
		{"too wide", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 1000, To: 60000}}, "holds 59001 ports, more than the 4096"},
		{"NodePort", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, LoadBalancerSharing: rng},
			"only a load balancer gives Services one IP, and serviceType is NodePort; set serviceType: LoadBalancer, or remove spec.loadBalancerSharing"},
		{"Local", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng, ServiceExternalTrafficPolicy: &local},
			`spec.serviceExternalTrafficPolicy: Invalid value: "Local": a load balancer shares one IP only between Services of externalTrafficPolicy Cluster (MetalLB refuses Local)`},
		{"MetalLB's key in serviceAnnotations", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng, ServiceAnnotations: map[string]string{"metallb.io/allow-shared-ip": "all"}},
			`spec.serviceAnnotations[metallb.io/allow-shared-ip]: Forbidden: with spec.loadBalancerSharing the operator sets the sharing key itself, one per workload`},
		{"Cilium's key in serviceAnnotations", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng, ServiceAnnotations: map[string]string{"lbipam.cilium.io/sharing-key": "all"}},
			`spec.serviceAnnotations[lbipam.cilium.io/sharing-key]: Forbidden`},
		{"cross-namespace in serviceOverrides", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng,
			ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"lbipam.cilium.io/sharing-cross-namespace":"*"}}}`)}},
			`spec.serviceOverrides.metadata.annotations[lbipam.cilium.io/sharing-cross-namespace]: Forbidden`},
		{"Local in serviceOverrides", v1alpha1.ListenerClassSpec{ServiceType: lb, LoadBalancerSharing: rng,
			ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"spec":{"externalTrafficPolicy":"Local"}}`)}},
			`spec.serviceOverrides.spec.externalTrafficPolicy: Invalid value: "Local"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "kafka"}, Spec: tt.spec}
			got := messages(ListenerClass(lc))
			if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
				t.Errorf("errors = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
