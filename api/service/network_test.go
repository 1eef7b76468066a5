package service

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestClassNetworkFieldsAreExposure: the IP families a class decides reach
// its Services, and no override or label of a Listener changes them or asks
// for a node port (the range's ports are the operator's to request).
func TestClassNetworkFieldsAreExposure(t *testing.T) {
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{
		ServiceType:    v1alpha1.ServiceTypeNodePort,
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack),
		IPFamilies:     []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol},
		NodePortRange:  &v1alpha1.NodePortRange{From: 31000, To: 31099},
		NodeAddress:    v1alpha1.NodeAddressAnnotation,
	}}
	class.Name = "kafka-dual"
	wantFamilies := []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	tests := []struct {
		name, override string
		labels         map[string]string
		refused        string
	}{
		{"no override", "", nil, ""},
		{"ipFamilies", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ipFamilies":["IPv4"]}}`, nil, "spec.ipFamilies"},
		{"ipFamilyPolicy", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ipFamilyPolicy":"SingleStack"}}`, nil, "spec.ipFamilyPolicy"},
		{"a node port outside the range", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"http","port":80,"nodePort":30001}]}}`, nil, "nodePort"},
		{"the node address annotation on the Service", "", map[string]string{v1alpha1.AnnotationNodeAddress: "203.0.113.9"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := listener()
			if tt.override != "" {
				l = listener(tt.override)
			}
			l.Labels = tt.labels
			res, err := Service(l, class, Carried{})
			if err != nil {
				t.Fatal(err)
			}
			joined := res.Refused.ToAggregate()
			if tt.refused == "" && joined != nil || tt.refused != "" && (joined == nil || !strings.Contains(joined.Error(), tt.refused)) {
				t.Errorf("refused = %v, want one naming %q", joined, tt.refused)
			}
			svc := typed(t, res.Service)
			if !reflect.DeepEqual(svc.Spec.IPFamilies, wantFamilies) || ptr.Deref(svc.Spec.IPFamilyPolicy, "") != corev1.IPFamilyPolicyRequireDualStack {
				t.Errorf("Service families %v/%v, want the class's %v/RequireDualStack", svc.Spec.IPFamilies, ptr.Deref(svc.Spec.IPFamilyPolicy, ""), wantFamilies)
			}
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					t.Errorf("port %s asks for node port %d: only the operator requests node ports", p.Name, p.NodePort)
				}
			}
			if _, ok := svc.Labels[v1alpha1.AnnotationNodeAddress]; ok {
				t.Errorf("the Service carries the node address key from the Listener's labels: %v", svc.Labels)
			}
		})
	}
}
