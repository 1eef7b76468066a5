package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestNetworkFields(t *testing.T) {
	dual := []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	tests := []struct {
		name    string
		spec    v1alpha1.ListenerClassSpec
		wantErr string
		warn    string
	}{
		{"a range", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31099}}, "", ""},
		{"from after to", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: 31099, To: 31000}},
			`spec.nodePortRange: Invalid value: "31099-31000": write from and to between 1 and 65535, from not greater than to`, ""},
		{"too wide", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: 20000, To: 32767}},
			"holds 12768 ports, more than the 4096 a range may", ""},
		{"a share per namespace", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31009, PerNamespace: ptr(int32(10))}}, "", ""},
		{"a share of none", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31009, PerNamespace: ptr(int32(0))}},
			`spec.nodePortRange.perNamespace: Invalid value: 0: write a number of ports between 1 and 10 (the size of range 31000-31009)`, ""},
		{"a share larger than the range", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31009, PerNamespace: ptr(int32(11))}},
			`spec.nodePortRange.perNamespace: Invalid value: 11: write a number of ports between 1 and 10 (the size of range 31000-31009): it is the most ports one namespace may hold of the range`, ""},
		{"range on ClusterIP warns", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31009}},
			"", "spec.nodePortRange: 31000-31009 is ignored: a ClusterIP Service has no node ports"},
		{"annotation source on LoadBalancer warns", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, NodeAddress: v1alpha1.NodeAddressAnnotation},
			"", "spec.nodeAddress: Annotation is ignored"},
		{"dual stack", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, IPFamilies: dual, IPFamilyPolicy: ptr(corev1.IPFamilyPolicyPreferDualStack)}, "", ""},
		{"two families without a policy", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, IPFamilies: dual},
			"spec.ipFamilyPolicy: Required value: two ipFamilies need ipFamilyPolicy PreferDualStack or RequireDualStack", ""},
		{"two families, SingleStack", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, IPFamilies: dual, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack)},
			"ipFamilyPolicy SingleStack takes one family", ""},
		{"a family twice", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv6Protocol}, IPFamilyPolicy: ptr(corev1.IPFamilyPolicyPreferDualStack)},
			`spec.ipFamilies[1]: Duplicate value: "IPv6"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "kafka"}, Spec: tt.spec}
			got := messages(ListenerClass(lc))
			if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
				t.Errorf("errors = %q, want %q", got, tt.wantErr)
			}
			warnings := strings.Join(ListenerClassWarnings(lc), "\n")
			if tt.warn == "" && warnings != "" || !strings.Contains(warnings, tt.warn) {
				t.Errorf("warnings = %q, want %q", warnings, tt.warn)
			}
		})
	}
}

func TestOverlappingRanges(t *testing.T) {
	class := func(name string, from, to int32) v1alpha1.ListenerClass {
		return v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &v1alpha1.NodePortRange{From: from, To: to}}}
	}
	a := class("kafka-a", 31000, 31099)
	others := []v1alpha1.ListenerClass{a, class("kafka-b", 31100, 31199), class("kafka-c", 31050, 31149), {ObjectMeta: metav1.ObjectMeta{Name: "plain"}}}
	got := OverlappingRanges(&a, others)
	if len(got) != 1 || got[0] != "spec.nodePortRange: 31000-31099 overlaps 31050-31149 of ListenerClass kafka-c: their Listeners share those ports first come, first served; give each workload a range of its own" {
		t.Errorf("OverlappingRanges = %q", got)
	}
}
