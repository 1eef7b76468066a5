package addresses

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ServicePorts maps a Service's port names to their port numbers: what a
// ClusterIP or LoadBalancer address is reachable on.
func ServicePorts(svc *corev1.Service) map[string]int32 {
	ports := make(map[string]int32, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p.Port
	}
	return ports
}

// NodePorts maps a Service's port names to the node ports allocated for
// them; ports without a node port (yet) are left out.
func NodePorts(svc *corev1.Service) map[string]int32 {
	ports := make(map[string]int32, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			ports[p.Name] = p.NodePort
		}
	}
	return ports
}

// ClusterDNSName is the in-cluster DNS name of a Service (names.ServiceFQDN).
func ClusterDNSName(svc *corev1.Service, clusterDomain string) string {
	return names.ServiceFQDN(svc.Name, svc.Namespace, clusterDomain)
}

// ClusterIPIngress is what a ClusterIP Listener publishes: every cluster IP
// of the Service (both families on a dual-stack Service) when IPs are
// preferred, else the Service's DNS name. A headless Service or one whose IPs
// are not allocated yet falls back to the DNS name, which always resolves.
func ClusterIPIngress(svc *corev1.Service, pref v1alpha1.AddressType, clusterDomain string) []v1alpha1.ListenerIngress {
	ports := ServicePorts(svc)
	if pref == v1alpha1.AddressTypeIP {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		var ings []v1alpha1.ListenerIngress
		for _, ip := range ips {
			if ip == "" || ip == corev1.ClusterIPNone {
				continue
			}
			ings = append(ings, v1alpha1.ListenerIngress{Address: ip, AddressType: v1alpha1.AddressTypeIP, Ports: maps.Clone(ports)})
		}
		if len(ings) > 0 {
			return ings
		}
	}
	return []v1alpha1.ListenerIngress{{Address: ClusterDNSName(svc, clusterDomain), AddressType: v1alpha1.AddressTypeHostname, Ports: ports}}
}

// LoadBalancerIngress is what a LoadBalancer Listener publishes: one address
// per entry of the Service's status.loadBalancer.ingress, its IP or hostname
// by preference (falling back to the other). Empty until the load balancer
// is provisioned. The order is the Service's (not sorted), as the existing
// operator gives it, so a multi-address load balancer gets the same
// default-address there and here.
func LoadBalancerIngress(svc *corev1.Service, pref v1alpha1.AddressType) []v1alpha1.ListenerIngress {
	ports := ServicePorts(svc)
	var ings []v1alpha1.ListenerIngress
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		addr, typ, ok := Pick(pref, lb.IP, lb.Hostname)
		if !ok {
			continue
		}
		ings = append(ings, v1alpha1.ListenerIngress{Address: addr, AddressType: typ, Ports: maps.Clone(ports)})
	}
	return ings
}

// NodePortIngress is what a NodePort Listener publishes: the addresses of
// each node that serves it (rule), with the Service's node ports, in a
// stable order. Nodes without a usable address are skipped; problems are
// the skipped entries of node address annotations.
func NodePortIngress(svc *corev1.Service, nodes []*corev1.Node, rule NodeRule) (ings []v1alpha1.ListenerIngress, problems []string) {
	ports := NodePorts(svc)
	for _, n := range nodes {
		got, bad := rule.Ingress(n, ports)
		for _, ing := range got {
			ing.Ports = maps.Clone(ports)
			ings = append(ings, ing)
		}
		problems = append(problems, bad...)
	}
	return SortByFamily(ings, rule.Families), problems
}
