package service

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestRequestNodePorts(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "http", "port": int64(80)},
		map[string]any{"name": "admin", "port": int64(81)},
	}}}}
	got, asked := RequestNodePorts(want, map[string]int32{"http": 30080, "gone": 30099})
	ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports")
	if ports[0].(map[string]any)["nodePort"] != int64(30080) || ports[1].(map[string]any)["nodePort"] != nil || !reflect.DeepEqual(asked, []string{"http"}) {
		t.Errorf("ports %v, asked %v; want http=30080 requested, admin left to the API server", ports, asked)
	}
	orig, _, _ := unstructured.NestedSlice(want.Object, "spec", "ports")
	if _, ok := orig[0].(map[string]any)["nodePort"]; ok {
		t.Error("the desired Service was changed in place")
	}
	if dropped := DropNodePorts(got, []int{0, 1, 2, 7}, asked); !reflect.DeepEqual(dropped, []string{"http"}) {
		t.Errorf("dropped %v, want [http]", dropped)
	}
	for _, tc := range []struct {
		spec v1alpha1.ListenerClassSpec
		want bool
	}{
		{v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}, true},
		{v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, StickyNodePorts: ptr.To(false)}, false},
		{v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer}, false},
	} {
		if got := tc.spec.HasStickyNodePorts(); got != tc.want {
			t.Errorf("HasStickyNodePorts(%s, sticky %v) = %v, want %v", tc.spec.ServiceType, tc.spec.StickyNodePorts, got, tc.want)
		}
	}
}

// TestForCreation: a Service made anew asks for the recorded node ports
// only when its class keeps them and there are some to ask for.
func TestForCreation(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "http", "port": int64(80)},
	}}}}
	nodePort := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}}
	notSticky := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, StickyNodePorts: ptr.To(false)}}
	for _, tc := range []struct {
		name      string
		class     *v1alpha1.ListenerClass
		recorded  map[string]int32
		wantAsked []string
	}{
		{"sticky, recorded", nodePort, map[string]int32{"http": 30080}, []string{"http"}},
		{"sticky, nothing recorded", nodePort, nil, nil},
		{"sticky, recorded for another port", nodePort, map[string]int32{"gone": 30080}, nil},
		{"not sticky", notSticky, map[string]int32{"http": 30080}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, asked := ForCreation(want, tc.class, tc.recorded)
			if !reflect.DeepEqual(asked, tc.wantAsked) {
				t.Errorf("asked %v, want %v", asked, tc.wantAsked)
			}
			if len(asked) == 0 && got != want {
				t.Error("asking for nothing, it should create want itself")
			}
		})
	}
}

// TestWithoutNodePort: the ports of a desired Service that have no node
// port in the Service as it is, by name.
func TestWithoutNodePort(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "http", "port": int64(80)},
		map[string]any{"name": "admin", "port": int64(81)},
		map[string]any{"name": "metrics", "port": int64(82)},
	}}}}
	current := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, NodePort: 31000}, {Name: "metrics", Port: 82}, {Name: "gone", Port: 83, NodePort: 31001},
	}}}
	for _, tc := range []struct {
		name    string
		current *corev1.Service
		want    []string
	}{
		{"made anew: every port", nil, []string{"http", "admin", "metrics"}},
		{"an existing Service: the ports added, and one without a node port", current, []string{"admin", "metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WithoutNodePort(want, tc.current); !slices.Equal(got, tc.want) {
				t.Errorf("WithoutNodePort = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a ClusterIP needs none", func(t *testing.T) {
		clusterIP := want.DeepCopy()
		clusterIP.Object["spec"].(map[string]any)["type"] = "ClusterIP"
		if got := WithoutNodePort(clusterIP, nil); len(got) != 0 {
			t.Errorf("WithoutNodePort = %v, want none: a Service of type ClusterIP takes no node port", got)
		}
	})
}

// TestInType: a Service held in another type than its class's takes the
// class's fields that type takes, and no other (the API server refuses a
// load balancer's fields on a NodePort, and node-port fields on a
// ClusterIP).
func TestInType(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"example.test/zone": "a"}},
		"spec": map[string]any{
			"type": "LoadBalancer", "externalTrafficPolicy": "Cluster", "loadBalancerClass": "x", "loadBalancerSourceRanges": []any{"10.0.0.0/8"},
			"allocateLoadBalancerNodePorts": true, "sessionAffinity": "ClientIP", "ports": []any{map[string]any{"name": "a", "port": int64(80)}},
		}}}
	for _, tc := range []struct {
		typ  corev1.ServiceType
		want []string // spec keys, sorted
	}{
		{corev1.ServiceTypeClusterIP, []string{"ports", "sessionAffinity", "type"}},
		{corev1.ServiceTypeNodePort, []string{"externalTrafficPolicy", "ports", "sessionAffinity", "type"}},
		{corev1.ServiceTypeLoadBalancer, []string{"allocateLoadBalancerNodePorts", "externalTrafficPolicy", "loadBalancerClass", "loadBalancerSourceRanges", "ports", "sessionAffinity", "type"}},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			before := want.DeepCopy()
			got := InType(want, tc.typ)
			if !reflect.DeepEqual(want.Object, before.Object) {
				t.Fatal("the desired Service was changed in place")
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			keys := slices.Sorted(maps.Keys(spec))
			if spec["type"] != string(tc.typ) || !slices.Equal(keys, tc.want) {
				t.Errorf("type %v, spec fields %v; want %s, %v", spec["type"], keys, tc.typ, tc.want)
			}
			if got.GetAnnotations()["example.test/zone"] != "a" {
				t.Errorf("annotations %v: the class's metadata must follow", got.GetAnnotations())
			}
		})
	}
}

// TestWithinHeld: while a class's range has no room, an existing Service
// takes what needs no new node port and keeps back only the rest.
func TestWithinHeld(t *testing.T) {
	want := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"metallb.io/address-pool": "private"}},
			"spec": map[string]any{
				"type": "LoadBalancer", "externalTrafficPolicy": "Local", "loadBalancerClass": "x",
				"allocateLoadBalancerNodePorts": true, "sessionAffinity": "ClientIP",
				"ports": []any{map[string]any{"name": "kept", "port": int64(80)}, map[string]any{"name": "new", "port": int64(81)}},
			}}}
	}
	svc := func(typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: typ}}
	}
	for _, tc := range []struct {
		name      string
		current   *corev1.Service
		need      []string
		wantType  string
		wantPorts []string
		wantSpec  []string // spec keys, sorted
	}{
		{"ClusterIP stays ClusterIP with every port", svc(corev1.ServiceTypeClusterIP), []string{"kept", "new"}, "ClusterIP", []string{"kept", "new"},
			[]string{"ports", "sessionAffinity", "type"}},
		{"NodePort keeps back the new port", svc(corev1.ServiceTypeNodePort), []string{"new"}, "LoadBalancer", []string{"kept"},
			[]string{"allocateLoadBalancerNodePorts", "externalTrafficPolicy", "loadBalancerClass", "ports", "sessionAffinity", "type"}},
		{"every port new: stays as it is", svc(corev1.ServiceTypeLoadBalancer), []string{"kept", "new"}, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := want()
			got := WithinHeld(w, tc.current, tc.need)
			if !reflect.DeepEqual(w.Object, want().Object) {
				t.Fatal("the desired Service was changed in place")
			}
			if tc.wantType == "" {
				if got != nil {
					t.Fatalf("got %v, want nil (the Service stays as it is)", got.Object["spec"])
				}
				return
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			var ports, keys []string
			for _, p := range spec["ports"].([]any) {
				ports = append(ports, p.(map[string]any)["name"].(string))
			}
			for k := range spec {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if spec["type"] != tc.wantType || !slices.Equal(ports, tc.wantPorts) || !slices.Equal(keys, tc.wantSpec) {
				t.Errorf("type %v, ports %v, spec fields %v; want %s, %v, %v", spec["type"], ports, keys, tc.wantType, tc.wantPorts, tc.wantSpec)
			}
			if got.GetAnnotations()["metallb.io/address-pool"] != "private" {
				t.Errorf("annotations %v: the class's metadata must follow", got.GetAnnotations())
			}
		})
	}
}
