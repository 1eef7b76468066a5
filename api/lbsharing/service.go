package lbsharing

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Annotations are the annotations of load balancers that decide which
// Services share an IP (MetalLB's, Cilium LB-IPAM's, old and new names).
// On a sharing class's Services the operator alone sets them: a class
// may not (api/validation), and Apply drops whatever an override put
// there before it sets the key.
var Annotations = []string{
	v1alpha1.AnnotationMetalLBSharedIP,
	"metallb.universe.tf/allow-shared-ip",
	v1alpha1.AnnotationCiliumSharingKey,
	"io.cilium/lb-ipam-sharing-key",
	"lbipam.cilium.io/sharing-cross-namespace",
	AnnotationMetalLBIPs,
	AnnotationCiliumIPs,
}

// The annotations that ask a load balancer for given addresses. Apply sets
// them to the key's address (KeyAddress) so that a Service made later
// joins it: MetalLB gives a new Service the lowest address its key allows,
// and a free address lower than the key's is allowed too.
const (
	AnnotationMetalLBIPs = "metallb.io/loadBalancerIPs"
	AnnotationCiliumIPs  = "lbipam.cilium.io/ips"
)

// Apply makes svc, the Service the operator applies for a Listener of a
// sharing class (after every override), carry the workload's key and the
// ports Assign gave: both sharing annotations set to key and no other
// sharing annotation, each port's port the one assigned (its targetPort,
// the port the pod serves, stays), externalTrafficPolicy Cluster (MetalLB
// shares an IP only between such Services). Nothing a tenant writes
// changes these, as they are set last.
func Apply(svc *unstructured.Unstructured, key string, ports map[string]int32, addresses []string) error {
	ann := svc.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for _, k := range Annotations {
		delete(ann, k)
	}
	ann[v1alpha1.AnnotationMetalLBSharedIP] = key
	ann[v1alpha1.AnnotationCiliumSharingKey] = key
	if len(addresses) > 0 {
		ann[AnnotationMetalLBIPs] = strings.Join(addresses, ",")
		ann[AnnotationCiliumIPs] = strings.Join(addresses, ",")
	}
	svc.SetAnnotations(ann)
	list, _, err := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if err != nil {
		return fmt.Errorf("ports of service %s/%s: %w", svc.GetNamespace(), svc.GetName(), err)
	}
	for i, p := range list {
		m, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("port %d of service %s/%s is not an object", i, svc.GetNamespace(), svc.GetName())
		}
		name, _ := m["name"].(string)
		port, ok := ports[name]
		if !ok {
			return fmt.Errorf("port %q of service %s/%s has no shared port assigned", name, svc.GetNamespace(), svc.GetName())
		}
		m["port"] = int64(port)
	}
	if err := unstructured.SetNestedSlice(svc.Object, list, "spec", "ports"); err != nil {
		return err
	}
	return unstructured.SetNestedField(svc.Object, string(corev1.ServiceExternalTrafficPolicyCluster), "spec", "externalTrafficPolicy")
}

// KeyAddress is the address of a sharing key: the IPs most of the key's
// Services (siblings, the Listener's own left out) have, the ones of the
// oldest Service among those that tie; nil when none has an address yet.
// A Service of the key that got another address (SharingRefused) is asked
// onto it.
func KeyAddress(siblings []corev1.Service) []string {
	type group struct {
		ips    []string
		n      int
		oldest metav1.Time
	}
	groups := map[string]*group{}
	var best *group
	for i := range siblings {
		theirs := ips(&siblings[i])
		if len(theirs) == 0 {
			continue
		}
		g := groups[strings.Join(theirs, ",")]
		if g == nil {
			g = &group{ips: theirs, oldest: siblings[i].CreationTimestamp}
			groups[strings.Join(theirs, ",")] = g
		}
		g.n++
		if siblings[i].CreationTimestamp.Before(&g.oldest) {
			g.oldest = siblings[i].CreationTimestamp
		}
	}
	for _, g := range groups {
		if best == nil || g.n > best.n || (g.n == best.n && (g.oldest.Before(&best.oldest) ||
			(g.oldest.Equal(&best.oldest) && strings.Join(g.ips, ",") < strings.Join(best.ips, ",")))) {
			best = g
		}
	}
	if best == nil {
		return nil
	}
	return best.ips
}

// OwnPorts are the ports of svc (nil: none) by name when it carries key
// (Apply made it); nil otherwise, so that a Service joining a key asks
// anew.
func OwnPorts(svc *corev1.Service, key string) map[string]int32 {
	if svc == nil || svc.Annotations[v1alpha1.AnnotationMetalLBSharedIP] != key {
		return nil
	}
	out := make(map[string]int32, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.Port
	}
	return out
}

// Verdict is whether the load balancer gave a Service its key's IP.
type Verdict struct {
	Reason, Message string
	Shared          bool
}

// Shared judges own, the Listener's Service of key, against the other
// Services of the key (siblings): shared when its ingress IPs are those of
// every sibling that has any; awaiting while it has none; refused when
// they differ, naming a sibling (of the same namespace) and both IPs.
func Shared(own *corev1.Service, key string, siblings []corev1.Service) Verdict {
	mine := ips(own)
	if len(mine) == 0 {
		return Verdict{Reason: v1alpha1.ReasonAwaitingSharedIP, Message: fmt.Sprintf(
			"Service %s (sharing key %s) has no load-balancer address yet; if it stays without one, read the load balancer's events on the Service (a pool that is full, or ports that clash with a Service of the same key)", own.Name, key)}
	}
	all := append(slices.Clip(siblings), *own)
	if theirs := KeyAddress(all); !slices.Equal(theirs, mine) {
		i := slices.IndexFunc(siblings, func(s corev1.Service) bool { return slices.Equal(ips(&s), theirs) })
		return Verdict{Reason: v1alpha1.ReasonSharingRefused, Message: fmt.Sprintf(
			"the load balancer gave Service %s address %s, not %s of Service %s of the same sharing key %s: it does not share. The operator asks for the key's address on the Service (metallb.io/loadBalancerIPs, lbipam.cilium.io/ips); read the load balancer's events on the Service; check that it reads the key (MetalLB: metallb.io/allow-shared-ip; Cilium LB-IPAM: lbipam.cilium.io/sharing-key), that the class names one pool (MetalLB: metallb.io/address-pool in its serviceAnnotations), and that no Service of the key other than a Listener's holds this Service's ports",
			own.Name, strings.Join(mine, ","), strings.Join(theirs, ","), siblings[i].Name, key)}
	}
	return Verdict{Shared: true, Reason: v1alpha1.ReasonShared, Message: fmt.Sprintf(
		"Service %s has address %s, shared by the %d other Service(s) of sharing key %s", own.Name, strings.Join(mine, ","), len(siblings), key)}
}

// ips are the ingress IPs of svc, sorted.
func ips(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
	}
	slices.Sort(out)
	return out
}
