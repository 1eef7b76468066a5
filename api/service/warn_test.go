package service

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestWarnNeverPicksTheNetwork: mode Warn is a migration mode. A key a
// class in mode Enforce would leave out never replaces what the class
// itself sets (serviceAnnotations, serviceOverrides), and never reaches a
// Service that does not carry it already; the load-balancer network keys
// of DigitalOcean, Hetzner and OCI are exposure (issue 48, shape 1).
func TestWarnNeverPicksTheNetwork(t *testing.T) {
	const head = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":`
	internal := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "internal-lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer,
		ServiceAnnotations: map[string]string{
			"service.beta.kubernetes.io/do-loadbalancer-network": "INTERNAL",
			"load-balancer.hetzner.cloud/disable-public-network": "true",
			"lb.example.com/network":                             "internal",
		},
		ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"lb.example.com/pool":"private"},"labels":{"pool.example.com/name":"private"}}}`)},
		TenantMetadata:   &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn},
	}}
	classOwn := map[string]string{
		"service.beta.kubernetes.io/do-loadbalancer-network": "INTERNAL",
		"load-balancer.hetzner.cloud/disable-public-network": "true",
		"lb.example.com/network":                             "internal",
		"lb.example.com/pool":                                "private",
	}
	tests := []struct {
		name      string
		override  string
		labels    map[string]string
		carried   Carried // what the Service carries now
		refused   []string
		leftOut   []string
		tolerated []string
		annsOut   map[string]string
		labelOut  string // the Service's pool.example.com/name label
	}{
		{name: "the providers' network keys are exposure, in mode Warn too",
			override: head + `{"service.beta.kubernetes.io/do-loadbalancer-network":"EXTERNAL","load-balancer.hetzner.cloud/disable-public-network":"false","oci.oraclecloud.com/load-balancer-type":"nlb"}}}`,
			refused: []string{"spec.objectOverrides[0].metadata.annotations[load-balancer.hetzner.cloud/disable-public-network]",
				"spec.objectOverrides[0].metadata.annotations[oci.oraclecloud.com/load-balancer-type]",
				"spec.objectOverrides[0].metadata.annotations[service.beta.kubernetes.io/do-loadbalancer-network]"},
			annsOut: classOwn, labelOut: "private"},
		{name: "a key off the allow-list never replaces the class's serviceAnnotations or serviceOverrides, even where the Service carries it",
			override: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"lb.example.com/network":"public","lb.example.com/pool":"public"},"labels":{"pool.example.com/name":"public"}}}`,
			carried:  Carried{Labels: map[string]string{"pool.example.com/name": ""}, Annotations: map[string]string{"lb.example.com/network": "", "lb.example.com/pool": ""}},
			leftOut: []string{"spec.objectOverrides[0].metadata.annotations[lb.example.com/network]", "spec.objectOverrides[0].metadata.annotations[lb.example.com/pool]",
				"spec.objectOverrides[0].metadata.labels[pool.example.com/name]"},
			annsOut: classOwn, labelOut: "private"},
		{name: "a Listener label off the allow-list never replaces the class's",
			labels:  map[string]string{"pool.example.com/name": "public"},
			carried: Carried{Labels: map[string]string{"pool.example.com/name": ""}},
			leftOut: []string{"metadata.labels[pool.example.com/name]"},
			annsOut: classOwn, labelOut: "private"},
		{name: "a key off the allow-list is not added to a Service that does not carry it",
			override: head + `{"lb.example.com/other":"x"}}}`,
			labels:   map[string]string{"team.example.com/owner": "a"},
			leftOut:  []string{"metadata.labels[team.example.com/owner]", "spec.objectOverrides[0].metadata.annotations[lb.example.com/other]"},
			annsOut:  classOwn, labelOut: "private"},
		{name: "a key off the allow-list that the Service carries stays, with a warning",
			override:  head + `{"lb.example.com/other":"y"}}}`,
			carried:   Carried{Annotations: map[string]string{"lb.example.com/other": ""}},
			tolerated: []string{"spec.objectOverrides[0].metadata.annotations[lb.example.com/other]"},
			annsOut:   withKey(classOwn, "lb.example.com/other", "y"), labelOut: "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := listener()
			if tt.override != "" {
				l = listener(tt.override)
			}
			l.Labels = tt.labels
			res, err := Service(l, internal, tt.carried)
			if err != nil {
				t.Fatal(err)
			}
			if got := errFields(res.Refused); !reflect.DeepEqual(got, tt.refused) {
				t.Errorf("refused %q\nwant    %q", got, tt.refused)
			}
			if got := errFields(res.LeftOut); !reflect.DeepEqual(got, tt.leftOut) {
				t.Errorf("left out %q\nwant     %q", got, tt.leftOut)
			}
			if got := errFields(res.Tolerated); !reflect.DeepEqual(got, tt.tolerated) {
				t.Errorf("tolerated %q, want %q", got, tt.tolerated)
			}
			for _, e := range append(res.LeftOut, res.Tolerated...) {
				if !strings.Contains(e.Detail, internal.Name) {
					t.Errorf("%q does not name the class", e.Detail)
				}
			}
			svc := typed(t, res.Service)
			if !reflect.DeepEqual(svc.Annotations, tt.annsOut) {
				t.Errorf("Service annotations %v\nwant %v", svc.Annotations, tt.annsOut)
			}
			if got := svc.Labels["pool.example.com/name"]; got != tt.labelOut {
				t.Errorf("Service label pool.example.com/name = %q, want the class's %q", got, tt.labelOut)
			}
			if _, ok := svc.Labels["team.example.com/owner"]; ok {
				t.Errorf("Service labels %v: a label off the allow-list was added", svc.Labels)
			}
		})
	}
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}
