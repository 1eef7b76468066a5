package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Labels every generated Service carries.
const (
	LabelName      = v1alpha1.LabelServiceKind
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// LabelNameValue is the app.kubernetes.io/name of generated Services.
	LabelNameValue = v1alpha1.LabelServiceKindValue

	// AnnotationServiceHash records a hash of the Service the operator last
	// applied. Comparing fields tells whether something drifted; the hash
	// tells whether the operator stopped wanting a field (an annotation or
	// override removed), which a field comparison cannot see.
	AnnotationServiceHash = "listeners.stackable.tech/service-hash"
)

// desiredService is the Service a Listener of this class should have, as the
// partial object the operator applies: only the fields it owns. Merge order,
// lowest to highest: generated fields and the class's serviceAnnotations,
// the class's serviceOverrides, the Listener's matching objectOverrides.
func desiredService(l *v1alpha1.Listener, class *v1alpha1.ListenerClass) (*unstructured.Unstructured, error) {
	svcName := names.ServiceName(l.Name)
	labels := map[string]any{}
	for k, v := range l.Labels {
		labels[k] = v
	}
	labels[LabelName] = LabelNameValue
	labels[LabelInstance] = instanceLabel(l.Name, svcName)
	labels[LabelManagedBy] = v1alpha1.FieldManager

	selector := map[string]any{}
	for k, v := range l.Spec.ExtraPodSelectorLabels {
		selector[k] = v
	}
	// A Listener of one StatefulSet pod selects it by the label the
	// StatefulSet controller sets (the pod needs no label of ours); any
	// other by the label the pod webhook (or the pod reconciler) adds.
	if pod := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; pod != "" {
		selector[v1alpha1.LabelStatefulSetPodName] = pod
	} else {
		selector[names.PodSelectorLabel(l.Name)] = v1alpha1.PodSelectorLabelValue
	}

	ports := make([]any, 0, len(l.Spec.Ports))
	for _, p := range l.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ports = append(ports, map[string]any{
			"name":       p.Name,
			"port":       int64(p.Port),
			"targetPort": int64(p.Port),
			"protocol":   string(proto),
		})
	}

	spec := map[string]any{
		"type":                     string(class.Spec.ServiceType),
		"ports":                    ports,
		"selector":                 selector,
		"publishNotReadyAddresses": ptr.Deref(l.Spec.PublishNotReadyAddresses, true),
	}
	switch class.Spec.ServiceType {
	case v1alpha1.ServiceTypeLoadBalancer:
		if class.Spec.LoadBalancerClass != nil {
			spec["loadBalancerClass"] = *class.Spec.LoadBalancerClass
		}
		spec["allocateLoadBalancerNodePorts"] = ptr.Deref(class.Spec.LoadBalancerAllocateNodePorts, true)
		fallthrough
	case v1alpha1.ServiceTypeNodePort:
		if class.Spec.ServiceExternalTrafficPolicy != nil {
			spec["externalTrafficPolicy"] = string(*class.Spec.ServiceExternalTrafficPolicy)
		}
	}

	metadata := map[string]any{
		"name":            svcName,
		"namespace":       l.Namespace,
		"labels":          labels,
		"ownerReferences": []any{ownerRef(l)},
	}
	if len(class.Spec.ServiceAnnotations) > 0 {
		ann := map[string]any{}
		for k, v := range class.Spec.ServiceAnnotations {
			ann[k] = v
		}
		metadata["annotations"] = ann
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}

	if class.Spec.ServiceOverrides != nil && len(class.Spec.ServiceOverrides.Raw) > 0 {
		patch, err := decodeObject(class.Spec.ServiceOverrides.Raw)
		if err != nil {
			return nil, fmt.Errorf("serviceOverrides of ListenerClass %s: %w", class.Name, err)
		}
		obj = mergePatch(obj, patch).(map[string]any)
	}
	for i, raw := range l.Spec.ObjectOverrides {
		patch, err := decodeObject(raw.Raw)
		if err != nil {
			return nil, fmt.Errorf("objectOverrides[%d]: %w", i, err)
		}
		if overrideMatches(patch, svcName, l.Namespace) {
			obj = mergePatch(obj, patch).(map[string]any)
		}
	}

	u := &unstructured.Unstructured{Object: obj}
	// Overrides may shape the Service but not move it or change who owns it:
	// the foreign-Service check and garbage collection depend on both.
	u.SetAPIVersion("v1")
	u.SetKind("Service")
	u.SetName(svcName)
	u.SetNamespace(l.Namespace)
	// Nor hide it from the operator's caches, which select this label.
	if err := unstructured.SetNestedField(u.Object, LabelNameValue, "metadata", "labels", LabelName); err != nil {
		return nil, fmt.Errorf("label service %s/%s: %w", l.Namespace, svcName, err)
	}
	if err := unstructured.SetNestedSlice(u.Object, []any{ownerRef(l)}, "metadata", "ownerReferences"); err != nil {
		return nil, fmt.Errorf("set owner of service %s/%s: %w", l.Namespace, svcName, err)
	}
	sum, err := hashObject(u.Object)
	if err != nil {
		return nil, fmt.Errorf("hash service %s/%s: %w", l.Namespace, svcName, err)
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationServiceHash] = sum
	u.SetAnnotations(ann)
	return u, nil
}

// instanceLabel is the app.kubernetes.io/instance of a Listener's Service:
// the Listener's name, or the Service's name when the Listener's name is too
// long or has characters a label value may not.
func instanceLabel(listenerName, svcName string) string {
	if len(validation.IsValidLabelValue(listenerName)) == 0 {
		return listenerName
	}
	return svcName
}

func ownerRef(l *v1alpha1.Listener) map[string]any {
	return map[string]any{
		"apiVersion":         v1alpha1.GroupVersion.String(),
		"kind":               "Listener",
		"name":               l.Name,
		"uid":                string(l.UID),
		"controller":         true,
		"blockOwnerDeletion": true,
	}
}

// decodeObject reads a partial object; integers stay int64 so that they
// compare equal to what the API server returns.
func decodeObject(raw []byte) (map[string]any, error) {
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be an object, not %T", v)
	}
	return m, nil
}

// overrideMatches reports whether a Listener's objectOverride targets the
// Service it generates: same apiVersion, kind and name, and its namespace
// or none.
func overrideMatches(o map[string]any, svcName, namespace string) bool {
	u := unstructured.Unstructured{Object: o}
	return u.GetAPIVersion() == "v1" && u.GetKind() == "Service" && u.GetName() == svcName &&
		(u.GetNamespace() == "" || u.GetNamespace() == namespace)
}

// mergePatch applies patch to target with JSON merge patch (RFC 7386)
// semantics: objects merge key by key, null deletes, anything else
// (lists included) replaces.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return runtime.DeepCopyJSONValue(patch)
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	} else {
		t = maps.Clone(t)
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// covers reports whether every field of want is present in have with the
// same value: have may carry more (defaults, allocations, other managers'
// fields), but none of what the operator wants may differ.
func covers(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !covers(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	if a, ok := number(have); ok {
		b, ok := number(want)
		return ok && a == b
	}
	return reflect.DeepEqual(have, want)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// hashObject is a short, stable digest of a JSON object (encoding/json sorts
// map keys).
func hashObject(obj map[string]any) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// serviceUpToDate reports whether an existing Service already is what the
// operator would apply, so that a steady cluster sees no writes.
func serviceUpToDate(existing *corev1.Service, want *unstructured.Unstructured) (bool, error) {
	if existing.Annotations[AnnotationServiceHash] != want.GetAnnotations()[AnnotationServiceHash] {
		return false, nil
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return false, fmt.Errorf("convert service %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	// Typed objects from a client carry no type meta.
	have["apiVersion"], have["kind"] = "v1", "Service"
	return covers(have, want.Object), nil
}
