package lbsharing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Held is what of want, the Service of a Listener of a sharing class (as
// made before Apply), is applied to current, the Listener's Service,
// while the range has no ports for it (Exhausted, Taken): what the class
// says otherwise (its metadata and fields) in current's type
// (service.InType), with the ports of want that current has, numbered as
// current numbers them, and none it lacks (named in missing). No port
// moves and none is added, so no other Service's port is taken. It keeps
// current's sharing key and asked address when the key is of namespace
// ns, and carries no sharing annotation otherwise, whatever an override
// wrote; externalTrafficPolicy Cluster unless current is of type
// ClusterIP. held is nil when current has none of want's ports: it then
// stays as it is.
func Held(want *unstructured.Unstructured, current *corev1.Service, ns string) (held *unstructured.Unstructured, missing []string, err error) {
	out := service.InType(want, current.Spec.Type)
	list, _, err := unstructured.NestedSlice(out.Object, "spec", "ports")
	if err != nil {
		return nil, nil, fmt.Errorf("ports of service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	has := make(map[string]int32, len(current.Spec.Ports))
	for _, p := range current.Spec.Ports {
		has[p.Name] = p.Port
	}
	var kept []any
	for i, p := range list {
		m, ok := p.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("port %d of service %s/%s is not an object", i, want.GetNamespace(), want.GetName())
		}
		name, _ := m["name"].(string)
		port, ok := has[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		m["port"] = int64(port)
		kept = append(kept, m)
	}
	if len(kept) == 0 {
		return nil, missing, nil
	}
	if err := unstructured.SetNestedSlice(out.Object, kept, "spec", "ports"); err != nil {
		return nil, nil, err
	}
	out.SetAnnotations(heldAnnotations(out.GetAnnotations(), current, ns))
	if current.Spec.Type != corev1.ServiceTypeClusterIP {
		if err := unstructured.SetNestedField(out.Object, string(corev1.ServiceExternalTrafficPolicyCluster), "spec", "externalTrafficPolicy"); err != nil {
			return nil, nil, err
		}
	}
	return out, missing, nil
}

// heldAnnotations are ann without any sharing annotation, but for the key
// and the address current asks for when its key is of namespace ns, set
// as Apply sets them.
func heldAnnotations(ann map[string]string, current *corev1.Service, ns string) map[string]string {
	if ann == nil {
		ann = map[string]string{}
	}
	for _, k := range Annotations {
		delete(ann, k)
	}
	key := current.Annotations[v1alpha1.AnnotationMetalLBSharedIP]
	if !KeyOfNamespace(key, ns) {
		return ann
	}
	ann[v1alpha1.AnnotationMetalLBSharedIP] = key
	ann[v1alpha1.AnnotationCiliumSharingKey] = key
	if ips := current.Annotations[AnnotationMetalLBIPs]; ips != "" {
		ann[AnnotationMetalLBIPs] = ips
		ann[AnnotationCiliumIPs] = ips
	}
	return ann
}
