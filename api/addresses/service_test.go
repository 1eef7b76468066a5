package addresses

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func svc(typ corev1.ServiceType, clusterIPs []string, lb ...corev1.LoadBalancerIngress) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: corev1.ServiceSpec{
			Type:       typ,
			ClusterIPs: clusterIPs,
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, NodePort: 30080},
				{Name: "https", Port: 443, NodePort: 30443},
			},
		},
	}
	if len(clusterIPs) > 0 {
		s.Spec.ClusterIP = clusterIPs[0]
	}
	s.Status.LoadBalancer.Ingress = lb
	return s
}

var (
	svcPorts  = map[string]int32{"http": 80, "https": 443}
	nodePorts = map[string]int32{"http": 30080, "https": 30443}
	ipT       = v1alpha1.AddressTypeIP
	hostT     = v1alpha1.AddressTypeHostname
)

func ing(addr string, typ v1alpha1.AddressType, ports map[string]int32) v1alpha1.ListenerIngress {
	return v1alpha1.ListenerIngress{Address: addr, AddressType: typ, Ports: ports}
}

func TestServiceIngress(t *testing.T) {
	const dns = "web.shop.svc.example.org"
	ext := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}
	in := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}
	in2 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.8"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-7"}
	host2 := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-8"}
	tests := []struct {
		name  string
		class v1alpha1.ServiceType
		pref  v1alpha1.AddressType
		svc   *corev1.Service
		nodes []*corev1.Node
		want  []v1alpha1.ListenerIngress
	}{
		{"ClusterIP, IP preferred, single stack", v1alpha1.ServiceTypeClusterIP, ipT,
			svc(corev1.ServiceTypeClusterIP, []string{"10.96.0.10"}), nil,
			[]v1alpha1.ListenerIngress{ing("10.96.0.10", ipT, svcPorts)}},
		{"ClusterIP, IP preferred, dual stack keeps both families in spec order", v1alpha1.ServiceTypeClusterIP, ipT,
			svc(corev1.ServiceTypeClusterIP, []string{"fd00::a", "10.96.0.10"}), nil,
			[]v1alpha1.ListenerIngress{ing("fd00::a", ipT, svcPorts), ing("10.96.0.10", ipT, svcPorts)}},
		{"ClusterIP, IP preferred, headless falls back to DNS name", v1alpha1.ServiceTypeClusterIP, ipT,
			svc(corev1.ServiceTypeClusterIP, []string{corev1.ClusterIPNone}), nil,
			[]v1alpha1.ListenerIngress{ing(dns, hostT, svcPorts)}},
		{"ClusterIP, IP preferred, not allocated yet falls back to DNS name", v1alpha1.ServiceTypeClusterIP, ipT,
			svc(corev1.ServiceTypeClusterIP, nil), nil,
			[]v1alpha1.ListenerIngress{ing(dns, hostT, svcPorts)}},
		{"ClusterIP, hostname preferred", v1alpha1.ServiceTypeClusterIP, hostT,
			svc(corev1.ServiceTypeClusterIP, []string{"10.96.0.10", "fd00::a"}), nil,
			[]v1alpha1.ListenerIngress{ing(dns, hostT, svcPorts)}},
		{"LoadBalancer, IP preferred, IP ingress", v1alpha1.ServiceTypeLoadBalancer, ipT,
			svc(corev1.ServiceTypeLoadBalancer, []string{"10.96.0.10"}, corev1.LoadBalancerIngress{IP: "198.51.100.1", Hostname: "lb.example.org"}), nil,
			[]v1alpha1.ListenerIngress{ing("198.51.100.1", ipT, svcPorts)}},
		{"LoadBalancer, hostname preferred, hostname ingress", v1alpha1.ServiceTypeLoadBalancer, hostT,
			svc(corev1.ServiceTypeLoadBalancer, nil, corev1.LoadBalancerIngress{IP: "198.51.100.1", Hostname: "lb.example.org"}), nil,
			[]v1alpha1.ListenerIngress{ing("lb.example.org", hostT, svcPorts)}},
		{"LoadBalancer, hostname preferred, only IP known", v1alpha1.ServiceTypeLoadBalancer, hostT,
			svc(corev1.ServiceTypeLoadBalancer, nil, corev1.LoadBalancerIngress{IP: "198.51.100.1"}), nil,
			[]v1alpha1.ListenerIngress{ing("198.51.100.1", ipT, svcPorts)}},
		{"LoadBalancer, IP preferred, only hostname known", v1alpha1.ServiceTypeLoadBalancer, ipT,
			svc(corev1.ServiceTypeLoadBalancer, nil, corev1.LoadBalancerIngress{Hostname: "lb.example.org"}), nil,
			[]v1alpha1.ListenerIngress{ing("lb.example.org", hostT, svcPorts)}},
		{"LoadBalancer, several ingresses in the Service's order, empty ones skipped", v1alpha1.ServiceTypeLoadBalancer, ipT,
			svc(corev1.ServiceTypeLoadBalancer, nil, corev1.LoadBalancerIngress{IP: "198.51.100.2"}, corev1.LoadBalancerIngress{}, corev1.LoadBalancerIngress{IP: "198.51.100.1"}), nil,
			[]v1alpha1.ListenerIngress{ing("198.51.100.2", ipT, svcPorts), ing("198.51.100.1", ipT, svcPorts)}},
		{"LoadBalancer, not provisioned yet", v1alpha1.ServiceTypeLoadBalancer, ipT,
			svc(corev1.ServiceTypeLoadBalancer, nil), nil, nil},
		{"NodePort, IP preferred, external then internal", v1alpha1.ServiceTypeNodePort, ipT,
			svc(corev1.ServiceTypeNodePort, nil), []*corev1.Node{node(in2, host2), node(in, ext, host)},
			[]v1alpha1.ListenerIngress{ing("10.0.0.8", ipT, nodePorts), ing("203.0.113.7", ipT, nodePorts)}},
		{"NodePort, hostname preferred", v1alpha1.ServiceTypeNodePort, hostT,
			svc(corev1.ServiceTypeNodePort, nil), []*corev1.Node{node(in2, host2), node(in, ext, host)},
			[]v1alpha1.ListenerIngress{ing("node-7", hostT, nodePorts), ing("node-8", hostT, nodePorts)}},
		{"NodePort, hostname preferred, node without hostname uses its IP", v1alpha1.ServiceTypeNodePort, hostT,
			svc(corev1.ServiceTypeNodePort, nil), []*corev1.Node{node(in2), node(host)},
			[]v1alpha1.ListenerIngress{ing("10.0.0.8", ipT, nodePorts), ing("node-7", hostT, nodePorts)}},
		{"NodePort, node without addresses skipped, duplicates dropped", v1alpha1.ServiceTypeNodePort, ipT,
			svc(corev1.ServiceTypeNodePort, nil), []*corev1.Node{node(), node(in), node(in)},
			[]v1alpha1.ListenerIngress{ing("10.0.0.7", ipT, nodePorts)}},
		{"NodePort, no nodes", v1alpha1.ServiceTypeNodePort, ipT,
			svc(corev1.ServiceTypeNodePort, nil), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []v1alpha1.ListenerIngress
			switch tt.class {
			case v1alpha1.ServiceTypeClusterIP:
				got = ClusterIPIngress(tt.svc, tt.pref, "example.org")
			case v1alpha1.ServiceTypeLoadBalancer:
				got = LoadBalancerIngress(tt.svc, tt.pref)
			case v1alpha1.ServiceTypeNodePort:
				got, _ = NodePortIngress(tt.svc, tt.nodes, NodeRule{Pref: tt.pref})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPortMaps(t *testing.T) {
	s := svc(corev1.ServiceTypeNodePort, nil)
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "pending", Port: 8080})
	if got, want := ServicePorts(s), map[string]int32{"http": 80, "https": 443, "pending": 8080}; !reflect.DeepEqual(got, want) {
		t.Errorf("ServicePorts = %v, want %v", got, want)
	}
	if got := NodePorts(s); !reflect.DeepEqual(got, nodePorts) {
		t.Errorf("NodePorts = %v, want %v (ports without a node port left out)", got, nodePorts)
	}
}

func TestIngressPortsAreNotShared(t *testing.T) {
	got := ClusterIPIngress(svc(corev1.ServiceTypeClusterIP, []string{"10.96.0.10", "fd00::a"}), ipT, "cluster.local")
	got[0].Ports["http"] = 1
	if got[1].Ports["http"] != 80 {
		t.Errorf("editing one address's ports changed another's: %v", got[1].Ports)
	}
}
