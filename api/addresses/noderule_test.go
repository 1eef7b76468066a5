package addresses

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func annotated(value string, addrs ...corev1.NodeAddress) *corev1.Node {
	n := node(addrs...)
	n.Name = "n1"
	n.Annotations = map[string]string{v1alpha1.AnnotationNodeAddress: value}
	return n
}

// TestNodeRule is what a NodePort Listener publishes for a node: the
// annotation of a class that reads it, one address per family of the
// Service for a class that decides the families, in the class's order.
func TestNodeRule(t *testing.T) {
	in4 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}
	in6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::7"}
	ext6 := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "2001:db8::7"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-7"}
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	dual := []corev1.IPFamily{v4, v6}
	ipPref := v1alpha1.PreferredAddressIP
	tests := []struct {
		name    string
		spec    v1alpha1.ListenerClassSpec
		svc     []corev1.IPFamily // the Service's families (status.ipFamilies)
		node    *corev1.Node
		want    []string
		problem string
	}{
		{"no families: the node's first address, as before", v1alpha1.ListenerClassSpec{}, dual, node(in6, in4), []string{"fd00::7"}, ""},
		{"dual class on a dual Service: IPv4 first", v1alpha1.ListenerClassSpec{IPFamilies: dual}, dual, node(in6, in4, host), []string{"10.0.0.7", "fd00::7"}, ""},
		{"class prefers IPv6", v1alpha1.ListenerClassSpec{IPFamilies: []corev1.IPFamily{v6, v4}}, dual, node(in4, in6), []string{"fd00::7", "10.0.0.7"}, ""},
		{"external beats internal per family", v1alpha1.ListenerClassSpec{IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack)}, dual, node(in4, in6, ext6), []string{"10.0.0.7", "2001:db8::7"}, ""},
		{"Service of one family: only that family", v1alpha1.ListenerClassSpec{IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack)}, []corev1.IPFamily{v6}, node(in4, in6), []string{"fd00::7"}, ""},
		{"families not known yet: one address", v1alpha1.ListenerClassSpec{IPFamilies: dual}, nil, node(in4, in6), []string{"10.0.0.7"}, ""},
		{"node without the Service's family: hostname", v1alpha1.ListenerClassSpec{IPFamilies: []corev1.IPFamily{v6}, PreferredAddressType: ipPref}, []corev1.IPFamily{v6}, node(in4, host), []string{"node-7"}, ""},
		{"annotation ignored without nodeAddress: Annotation", v1alpha1.ListenerClassSpec{}, nil, annotated("198.51.100.7", in4), []string{"10.0.0.7"}, ""},
		{"annotation wins over status", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation}, nil, annotated("198.51.100.7", in4), []string{"198.51.100.7"}, ""},
		{"annotation with both families", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation, IPFamilies: dual}, dual,
			annotated(" 2001:db8::99 , 198.51.100.7", in4, in6), []string{"198.51.100.7", "2001:db8::99"}, ""},
		{"annotation DNS name, IP preferred: the name", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation, PreferredAddressType: ipPref}, nil,
			annotated("kafka-7.example.com", in4), []string{"kafka-7.example.com"}, ""},
		{"invalid entry skipped, valid one used", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation}, nil,
			annotated("not an address,198.51.100.7", in4), []string{"198.51.100.7"}, `"not an address": neither an IP address nor a DNS name`},
		{"second address of a family skipped", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation}, nil,
			annotated("198.51.100.7,198.51.100.8", in4), []string{"198.51.100.7"}, "a second address of the same IP family"},
		{"nothing valid: falls back to status", v1alpha1.ListenerClassSpec{NodeAddress: v1alpha1.NodeAddressAnnotation}, nil,
			annotated("0.0.0.0", in4), []string{"10.0.0.7"}, "not an address a client can reach"},
	}
	ports := map[string]int32{"kafka": 31000}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.ServiceType = v1alpha1.ServiceTypeNodePort
			ings, problems := NodeRuleOf(&tt.spec, tt.svc).Ingress(tt.node, ports)
			var got []string
			for _, ing := range ings {
				got = append(got, ing.Address)
				if !reflect.DeepEqual(ing.Ports, ports) {
					t.Errorf("%s has ports %v, want %v", ing.Address, ing.Ports, ports)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("addresses = %v, want %v", got, tt.want)
			}
			joined := strings.Join(problems, "\n")
			if (tt.problem == "") != (joined == "") || !strings.Contains(joined, tt.problem) {
				t.Errorf("problems = %q, want one containing %q", joined, tt.problem)
			}
			if tt.problem != "" && !strings.Contains(joined, "node n1") {
				t.Errorf("problem %q does not name the node", joined)
			}
		})
	}
}

// TestNodePortIngressDualStackOrder: over several nodes, every address of
// the preferred family comes first, so the first address (default-address)
// is of that family whatever the nodes' addresses sort as.
func TestNodePortIngressDualStackOrder(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "kafka", NodePort: 31000}}}}
	n1 := node(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "30.0.0.1"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::1"})
	n2 := node(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::2"})
	spec := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}}
	ings, _ := NodePortIngress(svc, []*corev1.Node{n1, n2}, NodeRuleOf(&spec, spec.IPFamilies))
	var got []string
	for _, ing := range ings {
		got = append(got, ing.Address)
	}
	want := []string{"10.0.0.2", "30.0.0.1", "2001:db8::1", "2001:db8::2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NodePortIngress = %v, want %v", got, want)
	}
}
