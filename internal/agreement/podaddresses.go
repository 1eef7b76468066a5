package agreement

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// PodAddressShape is a Listener (with its status as the reconciler left
// it), its class (nil: gone), the pod's node (nil: none), the pod and its
// volume, and what the pod is told: the addresses of its volume tree and
// of its PodListeners entry, or that it waits (no tree, no entry).
type PodAddressShape struct {
	Name     string
	Listener *v1alpha1.Listener
	Class    *v1alpha1.ListenerClass
	Node     *corev1.Node
	// Pod is the pod (on PodNode), with the container ports it declares.
	Pod *corev1.Pod
	// PerClaim: the Listener is the volume's claim's own (listener-class),
	// not a shared one (listener-name). ClaimUID is the claim's UID, as
	// the volume records it; the volume is named PodVolume.
	PerClaim bool
	ClaimUID types.UID
	Want     []v1alpha1.ListenerIngress // nil: the pod waits
}

// Names of the pod-address shapes' objects.
const (
	PodListener = "broker-0"
	PodNode     = "node-a"
	PodClass    = "kafka-external"
	// PodClaimUID is the UID of the pod's listener claim, PodVolume the
	// name of its PersistentVolume (volumes.Name).
	PodClaimUID = types.UID("claim-uid")
	PodVolume   = "pvc-" + string(PodClaimUID)
)

// PodAddressShapes are the shapes of what a pod is told that the CSI node
// plugin (csi) and PodListeners (reconcile) must both answer the same: each
// service type (and a LoadBalancer class whose workloads share an IP), a class changed but not yet applied, a class gone, a node
// without addresses, node ports not yet published, a hostname template, a
// node address from the node's annotation, dual-stack Services; and the
// Listeners a volume may not publish (being deleted, of an earlier claim,
// a status older than its spec, lacking a port the pod declares, no
// class named) beside those it may (its own claim's, the Stackable
// operator's owned by the volume).
func PodAddressShapes() []PodAddressShape {
	out := append(addressShapes(), publishableShapes()...)
	for i := range out {
		if out[i].Pod == nil {
			out[i].Pod = addressPod()
		}
		if out[i].ClaimUID == "" {
			out[i].ClaimUID = PodClaimUID
		}
	}
	return out
}

func addressShapes() []PodAddressShape {
	np := map[string]int32{"kafka": 31092}
	ports := map[string]int32{"kafka": 9092}
	nodeIP := []v1alpha1.ListenerIngress{{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: np}}
	clusterIP := []v1alpha1.ListenerIngress{{Address: "broker-0.agree.svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: ports}}
	lbIP := []v1alpha1.ListenerIngress{{Address: "203.0.113.5", AddressType: v1alpha1.AddressTypeIP, Ports: ports}}
	sharedLB := []v1alpha1.ListenerIngress{{Address: "203.0.113.9", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": 9001}}}
	// What a Listener of gatewayClass publishes once its route is attached
	// (addresses.GatewayIngress): its name, the Gateway listener's port.
	gatewayIngress := []v1alpha1.ListenerIngress{{Address: "broker-0.agree.gw.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 9443}}}
	// What a Listener of tcpClass publishes once its route is attached
	// (addresses.TCPGatewayIngress): the Gateway's address (an IP or a
	// hostname), its section's port.
	tcpIngress := []v1alpha1.ListenerIngress{{Address: "10.88.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": 19000}}}
	tcpHostIngress := []v1alpha1.ListenerIngress{{Address: "gw.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 19001}}}
	return []PodAddressShape{
		{Name: "ClusterIP", Listener: podListener(v1alpha1.ServiceTypeClusterIP, clusterIP, nil), Class: podClass(v1alpha1.ServiceTypeClusterIP, nil), Node: podNode(true), Want: clusterIP},
		{Name: "NodePort", Listener: podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np), Class: podClass(v1alpha1.ServiceTypeNodePort, nil), Node: podNode(true), Want: nodeIP},
		{Name: "LoadBalancer", Listener: podListener(v1alpha1.ServiceTypeLoadBalancer, lbIP, nil), Class: podClass(v1alpha1.ServiceTypeLoadBalancer, nil), Node: podNode(true), Want: lbIP},
		// A sharing class (spec.loadBalancerSharing): the workload's one IP,
		// and the Service port the range gave this replica, not the port
		// the pod serves (its targetPort).
		{Name: "LoadBalancer, IP shared by the workload", Listener: podListener(v1alpha1.ServiceTypeLoadBalancer, sharedLB, nil), Class: sharingClass(), Node: podNode(true), Want: sharedLB},
		{Name: "LoadBalancer without an address yet", Listener: podListener(v1alpha1.ServiceTypeLoadBalancer, nil, nil), Class: podClass(v1alpha1.ServiceTypeLoadBalancer, nil), Node: podNode(true)},
		// The class went from ClusterIP to NodePort; the reconciler has not
		// applied it yet: the pod is told what the Service still is.
		{Name: "class changed, status not yet", Listener: podListener(v1alpha1.ServiceTypeClusterIP, clusterIP, nil), Class: podClass(v1alpha1.ServiceTypeNodePort, nil), Node: podNode(true), Want: clusterIP},
		{Name: "class gone, Service as last made", Listener: podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np), Node: podNode(true), Want: nodeIP},
		{Name: "class gone, nothing ever published", Listener: podListener("", nil, nil), Node: podNode(true)},
		{Name: "node without addresses", Listener: podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np), Class: podClass(v1alpha1.ServiceTypeNodePort, nil), Node: podNode(false)},
		{Name: "node ports not yet published", Listener: podListener(v1alpha1.ServiceTypeNodePort, nil, nil), Class: podClass(v1alpha1.ServiceTypeNodePort, nil), Node: podNode(true)},
		{Name: "NodePort with a hostname template", Listener: podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np),
			Class: podClass(v1alpha1.ServiceTypeNodePort, &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}), Node: podNode(true),
			Want: append([]v1alpha1.ListenerIngress{{Address: "broker-0.agree.kafka.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: np}}, nodeIP...)},
		// Networks that are not flat: a node behind NAT, both IP families.
		{Name: "NodePort, node address from the annotation", Listener: podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np),
			Class: withNetwork(podClass(v1alpha1.ServiceTypeNodePort, nil), v1alpha1.NodeAddressAnnotation), Node: annotatedNode("198.51.100.7, not an address"),
			Want: []v1alpha1.ListenerIngress{{Address: "198.51.100.7", AddressType: v1alpha1.AddressTypeIP, Ports: np}}},
		{Name: "NodePort, dual-stack Service", Listener: dualStack(podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np), corev1.IPv4Protocol, corev1.IPv6Protocol),
			Class: withNetwork(podClass(v1alpha1.ServiceTypeNodePort, nil), "", corev1.IPv4Protocol, corev1.IPv6Protocol), Node: dualNode(),
			Want: []v1alpha1.ListenerIngress{{Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: np}, {Address: "fd00::7", AddressType: v1alpha1.AddressTypeIP, Ports: np}}},
		{Name: "NodePort, dual-stack class preferring IPv6", Listener: dualStack(podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np), corev1.IPv6Protocol, corev1.IPv4Protocol),
			Class: withNetwork(podClass(v1alpha1.ServiceTypeNodePort, nil), "", corev1.IPv6Protocol, corev1.IPv4Protocol), Node: dualNode(),
			Want: []v1alpha1.ListenerIngress{{Address: "fd00::7", AddressType: v1alpha1.AddressTypeIP, Ports: np}, {Address: "10.0.0.7", AddressType: v1alpha1.AddressTypeIP, Ports: np}}},
		// Gateway classes: the name through the Gateway, once routed.
		{Name: "gateway class, route attached", Listener: podListener(v1alpha1.ServiceTypeClusterIP, gatewayIngress, nil), Class: gatewayClass(), Node: podNode(true), Want: gatewayIngress},
		{Name: "gateway class, route not attached yet", Listener: podListener(v1alpha1.ServiceTypeClusterIP, nil, nil), Class: gatewayClass(), Node: podNode(true)},
		{Name: "gateway class, name taken by another route", Listener: conflicted(podListener(v1alpha1.ServiceTypeClusterIP, nil, nil)), Class: gatewayClass(), Node: podNode(true)},
		// TCPRoute classes: the Gateway's address and the section's port.
		{Name: "TCPRoute class, route attached", Listener: podListener(v1alpha1.ServiceTypeClusterIP, tcpIngress, nil), Class: tcpClass(), Node: podNode(true), Want: tcpIngress},
		{Name: "TCPRoute class, Gateway reached by hostname", Listener: podListener(v1alpha1.ServiceTypeClusterIP, tcpHostIngress, nil), Class: tcpClass(), Node: podNode(true), Want: tcpHostIngress},
		{Name: "TCPRoute class, route not attached yet", Listener: podListener(v1alpha1.ServiceTypeClusterIP, nil, nil), Class: tcpClass(), Node: podNode(true)},
		{Name: "TCPRoute class, section taken", Listener: notReady(podListener(v1alpha1.ServiceTypeClusterIP, nil, nil), v1alpha1.ReasonGatewaySectionTaken), Class: tcpClass(), Node: podNode(true)},
		{Name: "TCPRoute class, sections exhausted", Listener: notReady(podListener(v1alpha1.ServiceTypeClusterIP, nil, nil), v1alpha1.ReasonGatewaySectionsExhausted), Class: tcpClass(), Node: podNode(true)},
		{Name: "hostname another Listener publishes", Listener: conflicted(podListener(v1alpha1.ServiceTypeNodePort, nodeIP, np)),
			Class: podClass(v1alpha1.ServiceTypeNodePort, &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}), Node: podNode(true), Want: nodeIP},
	}
}

// notReady is l as the reconciler leaves it when it cannot route it
// (reason), having published nothing.
func notReady(l *v1alpha1.Listener, reason string) *v1alpha1.Listener {
	l.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: 1}}
	return l
}

// conflicted is l as the reconciler leaves it when another Listener
// publishes its hostname first.
func conflicted(l *v1alpha1.Listener) *v1alpha1.Listener {
	l.Status.Conditions = append(l.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionHostnamePublished, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHostnameConflict})
	return l
}

// podListener is a Listener of generation 1 whose status the reconciler
// published for that generation (Ready).
func podListener(typ v1alpha1.ServiceType, ings []v1alpha1.ListenerIngress, nodePorts map[string]int32) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: PodListener, Generation: 1},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr(PodClass), Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092, Protocol: corev1.ProtocolTCP}}},
		Status: v1alpha1.ListenerStatus{ServiceType: typ, IngressAddresses: ings, NodePorts: nodePorts,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, ObservedGeneration: 1}}},
	}
}

// addressPod is the pod of the pod-address shapes: on PodNode, declaring
// the port its Listener has, plus ports.
func addressPod(ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: PodName, UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: PodNode, Containers: []corev1.Container{{Name: "kafka", Image: "kafka",
			Ports: append([]corev1.ContainerPort{{Name: "kafka", ContainerPort: 9092}}, ports...)}}},
	}
}

func podClass(typ v1alpha1.ServiceType, host *v1alpha1.HostnamePolicy) *v1alpha1.ListenerClass {
	return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: PodClass}, Spec: v1alpha1.ListenerClassSpec{ServiceType: typ, Hostname: host}}
}

// sharingClass is a LoadBalancer class whose workloads share one IP.
func sharingClass() *v1alpha1.ListenerClass {
	c := podClass(v1alpha1.ServiceTypeLoadBalancer, nil)
	c.Spec.LoadBalancerSharing = &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}
	return c
}

// gatewayClass routes through listener "tls" of Gateway gw/shared.
func gatewayClass() *v1alpha1.ListenerClass {
	c := podClass(v1alpha1.ServiceTypeClusterIP, &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.example.com"})
	c.Spec.Gateway = &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: "gw", SectionName: "tls"}}}
	return c
}

// tcpClass routes through sections tcp-0 … tcp-2 of Gateway gw/shared
// with TCPRoutes.
func tcpClass() *v1alpha1.ListenerClass {
	c := podClass(v1alpha1.ServiceTypeClusterIP, nil)
	c.Spec.Gateway = &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute, ParentRefs: []v1alpha1.GatewayParentRef{
		{Name: "shared", Namespace: "gw", SectionName: "tcp-0"}, {Name: "shared", Namespace: "gw", SectionName: "tcp-1"}, {Name: "shared", Namespace: "gw", SectionName: "tcp-2"}}}
	return c
}

func podNode(withAddress bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: PodNode}}
	if withAddress {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}
	}
	return n
}

// withNetwork gives class c a node address source and IP families.
func withNetwork(c *v1alpha1.ListenerClass, source v1alpha1.NodeAddressSource, families ...corev1.IPFamily) *v1alpha1.ListenerClass {
	c.Spec.NodeAddress = source
	c.Spec.IPFamilies = families
	if len(families) > 1 {
		policy := corev1.IPFamilyPolicyPreferDualStack
		c.Spec.IPFamilyPolicy = &policy
	}
	return c
}

// dualStack is l as the reconciler leaves it for a Service of families.
func dualStack(l *v1alpha1.Listener, families ...corev1.IPFamily) *v1alpha1.Listener {
	l.Status.IPFamilies = families
	return l
}

func annotatedNode(address string) *corev1.Node {
	n := podNode(true)
	n.Annotations = map[string]string{v1alpha1.AnnotationNodeAddress: address}
	return n
}

func dualNode() *corev1.Node {
	n := podNode(true)
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::7"})
	return n
}
