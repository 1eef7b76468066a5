package lbsharing

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestHeld: a Listener whose sharing range has no room keeps its Service's
// ports and key, and follows its class otherwise: the class's metadata,
// none of a tenant's sharing annotations, traffic policy Cluster, the
// fields its type takes.
func TestHeld(t *testing.T) {
	want := func(ports ...string) *unstructured.Unstructured {
		var list []any
		for _, p := range ports {
			list = append(list, map[string]any{"name": p, "port": int64(9092), "targetPort": int64(9092)})
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "kafka-2", "namespace": "ns", "annotations": map[string]any{
				"example.test/zone": "b", v1alpha1.AnnotationMetalLBSharedIP: "other/evil", "lbipam.cilium.io/sharing-cross-namespace": "*"}},
			"spec": map[string]any{"type": "LoadBalancer", "externalTrafficPolicy": "Local", "loadBalancerClass": "x", "ports": list},
		}}
	}
	current := func(typ corev1.ServiceType, key string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				v1alpha1.AnnotationMetalLBSharedIP: key, v1alpha1.AnnotationCiliumSharingKey: key,
				AnnotationMetalLBIPs: "192.0.2.10", AnnotationCiliumIPs: "192.0.2.10", "example.test/zone": "a", "external-dns.alpha.kubernetes.io/hostname": "old.example.test"}},
			Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: "a", Port: 9004}, {Name: "b", Port: 9005}}},
		}
	}
	for _, tc := range []struct {
		name        string
		want        *unstructured.Unstructured
		current     *corev1.Service
		ports       map[string]int64 // nil: stays as it is
		missing     []string
		annotations map[string]string
		spec        []string // spec keys, sorted
	}{
		{name: "keeps its ports and key, takes the class's metadata", want: want("a", "b"), current: current(corev1.ServiceTypeLoadBalancer, "ns/kafka"),
			ports: map[string]int64{"a": 9004, "b": 9005},
			annotations: map[string]string{"example.test/zone": "b", v1alpha1.AnnotationMetalLBSharedIP: "ns/kafka", v1alpha1.AnnotationCiliumSharingKey: "ns/kafka",
				AnnotationMetalLBIPs: "192.0.2.10", AnnotationCiliumIPs: "192.0.2.10"},
			spec: []string{"externalTrafficPolicy", "loadBalancerClass", "ports", "type"}},
		{name: "a new port waits", want: want("a", "c"), current: current(corev1.ServiceTypeLoadBalancer, "ns/kafka"),
			ports: map[string]int64{"a": 9004}, missing: []string{"c"},
			annotations: map[string]string{"example.test/zone": "b", v1alpha1.AnnotationMetalLBSharedIP: "ns/kafka", v1alpha1.AnnotationCiliumSharingKey: "ns/kafka",
				AnnotationMetalLBIPs: "192.0.2.10", AnnotationCiliumIPs: "192.0.2.10"},
			spec: []string{"externalTrafficPolicy", "loadBalancerClass", "ports", "type"}},
		{name: "a key of another namespace is not kept", want: want("a"), current: current(corev1.ServiceTypeLoadBalancer, "other/kafka"),
			ports: map[string]int64{"a": 9004}, annotations: map[string]string{"example.test/zone": "b"},
			spec: []string{"externalTrafficPolicy", "loadBalancerClass", "ports", "type"}},
		{name: "a ClusterIP stays ClusterIP", want: want("a", "b"), current: current(corev1.ServiceTypeClusterIP, ""),
			ports: map[string]int64{"a": 9004, "b": 9005}, annotations: map[string]string{"example.test/zone": "b"},
			spec: []string{"ports", "type"}},
		{name: "every port new: stays as it is", want: want("c"), current: current(corev1.ServiceTypeLoadBalancer, "ns/kafka"), missing: []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.want.DeepCopy()
			got, missing, err := Held(tc.want, tc.current, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.want.Object, before.Object) {
				t.Fatal("the desired Service was changed in place")
			}
			if !slices.Equal(missing, tc.missing) {
				t.Errorf("missing %v, want %v", missing, tc.missing)
			}
			if tc.ports == nil {
				if got != nil {
					t.Fatalf("got %v, want nil (the Service stays as it is)", got.Object)
				}
				return
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			ports := map[string]int64{}
			for _, p := range spec["ports"].([]any) {
				m := p.(map[string]any)
				ports[m["name"].(string)] = m["port"].(int64)
				if m["targetPort"] != int64(9092) {
					t.Errorf("port %v forwards to %v, want the Listener's 9092", m["name"], m["targetPort"])
				}
			}
			if !maps.Equal(ports, tc.ports) {
				t.Errorf("ports %v, want %v", ports, tc.ports)
			}
			if !maps.Equal(got.GetAnnotations(), tc.annotations) {
				t.Errorf("annotations %v, want %v", got.GetAnnotations(), tc.annotations)
			}
			if keys := slices.Sorted(maps.Keys(spec)); !slices.Equal(keys, tc.spec) {
				t.Errorf("spec fields %v, want %v", keys, tc.spec)
			}
			if p, ok := spec["externalTrafficPolicy"]; ok && p != "Cluster" {
				t.Errorf("externalTrafficPolicy %v, want Cluster", p)
			}
		})
	}
}
