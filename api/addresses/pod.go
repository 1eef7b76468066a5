package addresses

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Wait says why a pod cannot be told its addresses now: the volume may not
// publish its Listener (Publishable), or something the reconciler, a load
// balancer or the node has not published. The CSI node plugin answers
// Unavailable with it (kubelet retries; a tree published before stays as
// it is), and the pod reconciler keeps the volume's PodListeners entry as
// it last wrote it (none for a new pod): PodListeners never holds
// addresses the pod's tree would not.
type Wait struct {
	Reason string
	// Fix is true when only a user can end the wait (the Listener names no
	// class, or its class does not exist and nothing was ever published
	// for it): CSI answers FailedPrecondition rather than Unavailable.
	Fix bool
}

func (w *Wait) Error() string { return w.Reason }

func wait(l *v1alpha1.Listener, format string, args ...any) *Wait {
	return &Wait{Reason: fmt.Sprintf("listener %s/%s has no addresses yet: waiting for ", l.Namespace, l.Name) + fmt.Sprintf(format, args...)}
}

// PodServiceType is the type of Service whose addresses a pod of Listener
// l is told: the one the Listener's Service has (status.serviceType), and
// before the reconciler first published it, the class's. "" when neither
// is known. Callers read the pod's node only for NodePort.
func PodServiceType(l *v1alpha1.Listener, class *v1alpha1.ListenerClass) v1alpha1.ServiceType {
	if l.Status.ServiceType != "" {
		return l.Status.ServiceType
	}
	if class != nil {
		return class.Spec.ServiceType
	}
	return ""
}

// ForPod is what the pod of v is told for its listener volume: the one
// rule behind both the pod's address tree (CSI NodePublish) and its
// PodListeners entry (and so the address-change signal). First whether the
// volume may publish its Listener at all (Publishable), then the
// addresses (forPod). The error is a *Wait when the pod must wait.
func ForPod(v PodVolume) (v1alpha1.PodListener, error) {
	if w := Publishable(v.Volume, v.Listener, v.Pod); w != nil {
		return v1alpha1.PodListener{}, w
	}
	return forPod(v.Listener, v.Class, v.Node)
}

// forPod is the addresses a pod of Listener l on node is told.
// class is l's class, nil when it is gone: the Service stays as last
// made, so the pod is told what the Listener publishes, with the default
// address preference and no hostname. node is the pod's node, needed only
// for NodePort (PodServiceType). A NodePort pod gets its own node's
// address with the Listener's node ports, any other pod every address of
// the Listener; the class's DNS name comes first in both. The error is a
// *Wait when something is not published yet: a type, addresses, node
// ports, a port the Listener declares.
func forPod(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, node *corev1.Node) (v1alpha1.PodListener, error) {
	typ := PodServiceType(l, class)
	spec := v1alpha1.ListenerClassSpec{ServiceType: typ}
	if class != nil {
		spec = class.Spec
		spec.ServiceType = typ
	}
	var pl v1alpha1.PodListener
	switch {
	case typ == "":
		return pl, &Wait{Fix: true, Reason: fmt.Sprintf("listener %s/%s has no addresses: ListenerClass %q does not exist and no Service was ever made for it; create the class or name another in spec.className",
			l.Namespace, l.Name, ptr.Deref(l.Spec.ClassName, ""))}
	case typ == v1alpha1.ServiceTypeNodePort:
		pl.Scope = v1alpha1.PodListenerScopeNode
		if len(l.Status.NodePorts) == 0 && len(l.Spec.Ports) > 0 {
			return pl, wait(l, "the node ports of its NodePort Service in status.nodePorts")
		}
		if node == nil {
			return pl, wait(l, "the pod to be scheduled to a node")
		}
		ings, _ := NodeRuleOf(&spec, l.Status.IPFamilies).Ingress(node, l.Status.NodePorts)
		if len(ings) == 0 {
			return pl, wait(l, "node %s to report an IP address or hostname in its status", node.Name)
		}
		pl.IngressAddresses = ings
	default:
		pl.Scope = v1alpha1.PodListenerScopeCluster
		if len(l.Status.IngressAddresses) == 0 {
			if typ == v1alpha1.ServiceTypeLoadBalancer {
				return pl, wait(l, "the load balancer of its Service to get an address")
			}
			return pl, wait(l, "the reconciler to publish status.ingressAddresses")
		}
		pl.IngressAddresses = l.Status.IngressAddresses
	}
	if class != nil && typ == v1alpha1.ServiceTypeNodePort {
		// The class's DNS name first, as in the Listener's status (which
		// already carries it for the other types).
		pl.IngressAddresses = WithHostname(ListenerHostname(&spec, l), pl.IngressAddresses)
	}
	if missing := unpublishedPorts(l, pl.IngressAddresses); len(missing) > 0 {
		return pl, &Wait{Reason: fmt.Sprintf("listener %s/%s has not published port(s) %s yet: waiting for the reconciler", l.Namespace, l.Name, strings.Join(missing, ", "))}
	}
	return pl, nil
}

// unpublishedPorts are the declared ports that some address lacks.
func unpublishedPorts(l *v1alpha1.Listener, addrs []v1alpha1.ListenerIngress) []string {
	var missing []string
	for _, p := range l.Spec.Ports {
		for _, a := range addrs {
			if _, ok := a.Ports[p.Name]; !ok {
				missing = append(missing, p.Name)
				break
			}
		}
	}
	return missing
}
