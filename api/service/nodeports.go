package service

import (
	"iter"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ForCreation is the Service to create anew for a Listener of class that
// recorded the node ports in recorded (its status.nodePorts): when the
// class keeps node ports (sticky node ports), want asking for them
// (RequestNodePorts), and the names it asks for; otherwise want itself and
// none. A class with a node port range asks its range instead
// (api/nodeports, then RequestNodePorts).
func ForCreation(want *unstructured.Unstructured, class *v1alpha1.ListenerClass, recorded map[string]int32) (*unstructured.Unstructured, []string) {
	if !class.Spec.HasStickyNodePorts() || len(recorded) == 0 {
		return want, nil
	}
	req, asked := RequestNodePorts(want, recorded)
	if len(asked) == 0 {
		return want, nil
	}
	return req, asked
}

// RequestNodePorts returns a copy of the desired Service want in which each
// port asks for the node port recorded for its name in recorded, and the
// names it asked for. Ports without a recorded node port are left to the
// API server. The desired Service has no node port of its own: its ports
// are the Listener's declared ports (portsFrom), and no override, not even
// the class's serviceOverrides, sets one (the class webhook warns that
// such a node port is ignored; docs/migration.md). Only the operator's own
// record (status.nodePorts) is ever passed: a node port is exposure, never
// taken from a tenant's spec.
func RequestNodePorts(want *unstructured.Unstructured, recorded map[string]int32) (*unstructured.Unstructured, []string) {
	out := want.DeepCopy()
	ports, _, _ := unstructured.NestedSlice(out.Object, "spec", "ports")
	var asked []string
	for i, p := range ports {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if np, ok := recorded[name]; ok && np > 0 {
			m["nodePort"] = int64(np)
			ports[i] = m
			asked = append(asked, name)
		}
	}
	_ = unstructured.SetNestedSlice(out.Object, ports, "spec", "ports")
	return out, asked
}

// WithoutNodePort names the ports of the desired Service want that have no
// node port in current, the Service as it is (by name: the API server
// keeps a port's node port by its name across updates): every port when
// current is nil, the ports added to the Listener since otherwise; none
// when want is of type ClusterIP (held back in that type: InType).
func WithoutNodePort(want *unstructured.Unstructured, current *corev1.Service) []string {
	if t, _, _ := unstructured.NestedString(want.Object, "spec", "type"); t == string(corev1.ServiceTypeClusterIP) {
		return nil
	}
	has := map[string]bool{}
	if current != nil {
		for _, p := range current.Spec.Ports {
			has[p.Name] = p.NodePort != 0
		}
	}
	ports, _, _ := unstructured.NestedSlice(want.Object, "spec", "ports")
	var names []string
	for _, p := range ports {
		m, ok := p.(map[string]any)
		if name, _ := m["name"].(string); ok && !has[name] {
			names = append(names, name)
		}
	}
	return names
}

// DropNodePorts removes the node port of the ports at idx that the operator
// requested (named in asked) and returns their names.
func DropNodePorts(want *unstructured.Unstructured, idx []int, asked []string) []string {
	ports, _, _ := unstructured.NestedSlice(want.Object, "spec", "ports")
	var names []string
	for name, m := range requestedAt(ports, idx) {
		if slices.Contains(asked, name) {
			delete(m, "nodePort")
			names = append(names, name)
		}
	}
	_ = unstructured.SetNestedSlice(want.Object, ports, "spec", "ports")
	return names
}

// RequestedAt names the ports at idx that ask for a node port in want.
func RequestedAt(want *unstructured.Unstructured, idx []int) []string {
	ports, _, _ := unstructured.NestedSlice(want.Object, "spec", "ports")
	var names []string
	for name := range requestedAt(ports, idx) {
		names = append(names, name)
	}
	return names
}

// requestedAt yields the name and object of each port at idx (the indexes
// an API server's refusal names) that asks for a node port.
func requestedAt(ports []any, idx []int) iter.Seq2[string, map[string]any] {
	return func(yield func(string, map[string]any) bool) {
		for _, i := range idx {
			if i < 0 || i >= len(ports) {
				continue
			}
			m, ok := ports[i].(map[string]any)
			if _, had := m["nodePort"]; !ok || !had {
				continue
			}
			name, _ := m["name"].(string)
			if !yield(name, m) {
				return
			}
		}
	}
}

// clusterIPFields are the spec fields the API server takes on a Service of
// type ClusterIP (an allow-list: a field it takes only on a Service with
// node ports, such as externalTrafficPolicy, loadBalancerClass or
// loadBalancerSourceRanges, is invalid there).
var clusterIPFields = []string{
	"type", "ports", "selector", "clusterIP", "clusterIPs", "externalIPs",
	"sessionAffinity", "sessionAffinityConfig", "publishNotReadyAddresses",
	"ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "trafficDistribution",
}

// nodePortFields are the spec fields the API server takes on a Service of
// type NodePort: a ClusterIP's and the traffic policy (loadBalancerClass,
// loadBalancerSourceRanges and the like are a load balancer's only).
var nodePortFields = append(slices.Clip(clusterIPFields), "externalTrafficPolicy")

// InType is want as a Service of type typ: want's metadata, and of its
// spec the fields a Service of that type takes (an allow-list for
// ClusterIP and NodePort; a LoadBalancer takes them all). A Service held
// back in its type while its class asks for another (WithinHeld,
// lbsharing.Held) still follows the class otherwise.
func InType(want *unstructured.Unstructured, typ corev1.ServiceType) *unstructured.Unstructured {
	out := want.DeepCopy()
	var allowed []string
	switch typ {
	case corev1.ServiceTypeClusterIP:
		allowed = clusterIPFields
	case corev1.ServiceTypeNodePort:
		allowed = nodePortFields
	}
	spec, _, _ := unstructured.NestedMap(out.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	for k := range spec {
		if allowed != nil && !slices.Contains(allowed, k) {
			delete(spec, k)
		}
	}
	spec["type"] = string(typ)
	_ = unstructured.SetNestedMap(out.Object, spec, "spec")
	return out
}

// WithinHeld is what of the desired Service want can be applied to the
// Service current (which exists) while its class's node-port range has no
// room for the ports named in need (WithoutNodePort): everything that
// needs no new node port, so that the ports the Listener dropped go and
// the class's metadata follows; only what cannot be had is kept back.
//   - A Service with no node port at all (type ClusterIP, moved to a class
//     with a range) stays of type ClusterIP and takes every port of want,
//     without the fields only a Service with node ports takes.
//   - Any other takes want without the ports in need; nil when no port is
//     left (every port is new): it then stays as it is.
func WithinHeld(want *unstructured.Unstructured, current *corev1.Service, need []string) *unstructured.Unstructured {
	if current.Spec.Type == corev1.ServiceTypeClusterIP {
		return InType(want, corev1.ServiceTypeClusterIP)
	}
	out := want.DeepCopy()
	ports, _, _ := unstructured.NestedSlice(out.Object, "spec", "ports")
	ports = slices.DeleteFunc(ports, func(p any) bool {
		m, _ := p.(map[string]any)
		name, _ := m["name"].(string)
		return slices.Contains(need, name)
	})
	if len(ports) == 0 {
		return nil
	}
	_ = unstructured.SetNestedSlice(out.Object, ports, "spec", "ports")
	return out
}
