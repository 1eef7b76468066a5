package service

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
)

// Result is the Service a Listener of a class gets.
type Result struct {
	// Service is the partial Service the operator applies: the fields it
	// owns, with the refused parts of the Listener's overrides left out.
	Service *unstructured.Unstructured
	// Refused are the parts of the Listener's objectOverrides that the
	// class does not allow (undecodable overrides, exposure fields, locked
	// fields, keys off the allow-list, ports), each naming the field, the
	// class and the fix. The webhook refuses the Listener; the reconciler
	// applies Service without them.
	Refused field.ErrorList
	// LeftOut are the keys of the Listener's own labels (some handed down
	// from its claim) that do not reach the Service: exposure and locked
	// keys, and, in mode Enforce, keys off the allow-list. Helm, Argo CD,
	// Flux and the StatefulSet controller put their own labels there, so
	// these are warned about, never refused. In mode Warn, also the keys
	// off the allow-list, of the labels or the objectOverrides, that Warn
	// does not keep: ones the class sets itself, and ones the Service does
	// not carry already (tenantRule.warnLeavesOut).
	LeftOut field.ErrorList
	// Tolerated are the keys off the allow-list that reach the Service
	// only because the class's spec.tenantMetadata.mode is Warn and the
	// Service carries them already.
	Tolerated field.ErrorList
}

// Fields lists the fields of refusals, once each, for an event or a
// condition message.
func Fields(refused field.ErrorList) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range refused {
		if !seen[e.Field] {
			seen[e.Field] = true
			out = append(out, e.Field)
		}
	}
	return out
}

var overridesPath = field.NewPath("spec", "objectOverrides")

// Service turns a ListenerClass and a Listener, whose Service carries
// carried now (CarriedBy; the zero value before it exists), into the
// Service that results. Merge order, lowest to highest: the generated fields with the
// Listener's labels that the class allows, the class's serviceAnnotations,
// the class's serviceOverrides, the Listener's objectOverrides that target
// this Service. What an override may not change (exposure, locked and
// operator fields, keys off the allow-list, the ports' fixed fields) is
// then reset to what it was before the Listener's overrides, and every
// reset is a Refused error. The error is the class's own: its
// serviceOverrides do not decode (the class webhook refuses that).
func Service(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, carried Carried) (Result, error) {
	svcName := names.ServiceName(l.Name)
	var classPatch map[string]any
	if class.Spec.ServiceOverrides != nil && len(class.Spec.ServiceOverrides.Raw) > 0 {
		var errs field.ErrorList
		classPatch, errs = Decode(class.Spec.ServiceOverrides.Raw, true, field.NewPath("spec", "serviceOverrides"))
		if len(errs) > 0 {
			return Result{}, fmt.Errorf("ListenerClass %s: %w", class.Name, errs.ToAggregate())
		}
	}
	rule := tenantRuleOf(class, lockedOf(class), classPatch, carried)
	obj := generated(l, class, svcName)
	declared := sliceOf(obj["spec"].(map[string]any)["ports"])
	var res Result
	res.LeftOut, res.Tolerated = addTenantLabels(obj, l.Labels, rule)
	if classPatch != nil {
		obj = MergePatch(obj, classPatch).(map[string]any)
	}
	// What the Listener's overrides start from: the reference every field
	// they may not change is held to.
	base := runtime.DeepCopyJSON(obj)
	for i, raw := range l.Spec.ObjectOverrides {
		p := overridesPath.Index(i)
		patch, errs := Decode(raw.Raw, false, p)
		if len(errs) > 0 {
			res.Refused = append(res.Refused, errs...)
			continue
		}
		if route, ok := RouteOverride(patch); ok {
			res.Refused = append(res.Refused, field.Forbidden(p, refusal("a "+route, "is exposure (the route a gateway class makes for the Listener, from the class's spec.gateway and spec.hostname alone)", class.Name)))
			continue
		}
		if !Matches(patch, svcName, l.Namespace) {
			continue
		}
		obj = MergePatch(obj, patch).(map[string]any)
		refused, leftOut, tolerated := enforce(obj, base, rule, p)
		res.Refused = append(res.Refused, refused...)
		res.LeftOut = append(res.LeftOut, leftOut...)
		res.Tolerated = append(res.Tolerated, tolerated...)
	}
	// By construction, whatever any override said: the Service's ports are
	// the Listener's declared ports, with only their open fields changed.
	spec := child(obj, "spec")
	spec["ports"] = portsFrom(declared, sliceOf(spec["ports"]))
	SortErrors(res.Refused)

	u := &unstructured.Unstructured{Object: obj}
	// Overrides may shape the Service but not move it or change who owns it:
	// the foreign-Service check and garbage collection depend on both.
	u.SetAPIVersion("v1")
	u.SetKind("Service")
	u.SetName(svcName)
	u.SetNamespace(l.Namespace)
	// Nor hide it from the operator's caches, which select this label.
	if err := unstructured.SetNestedField(u.Object, LabelNameValue, "metadata", "labels", LabelName); err != nil {
		return Result{}, fmt.Errorf("label service %s/%s: %w", l.Namespace, svcName, err)
	}
	if err := unstructured.SetNestedSlice(u.Object, []any{ownerRef(l)}, "metadata", "ownerReferences"); err != nil {
		return Result{}, fmt.Errorf("set owner of service %s/%s: %w", l.Namespace, svcName, err)
	}
	res.Service = u
	return res, nil
}

// generated is the Service the operator makes before any tenant input and
// serviceOverrides.
func generated(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, svcName string) map[string]any {
	labels := map[string]any{
		LabelName:      LabelNameValue,
		LabelInstance:  instanceLabel(l.Name, svcName),
		LabelManagedBy: v1alpha1.FieldManager,
	}

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

	spec := map[string]any{
		"type":                     string(class.Spec.ServiceType),
		"ports":                    declaredPorts(l.Spec.Ports),
		"selector":                 selector,
		"publishNotReadyAddresses": l.Spec.EffectivePublishNotReadyAddresses(),
	}
	// The class's IP families are exposure: a Listener cannot add a family
	// reachable from another network.
	if class.Spec.IPFamilyPolicy != nil {
		spec["ipFamilyPolicy"] = string(*class.Spec.IPFamilyPolicy)
	}
	if len(class.Spec.IPFamilies) > 0 {
		families := make([]any, 0, len(class.Spec.IPFamilies))
		for _, f := range class.Spec.IPFamilies {
			families = append(families, string(f))
		}
		spec["ipFamilies"] = families
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
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}
}

// locked is what a class locks beyond exposure (spec.lockedServiceFields).
type locked struct {
	spec, annotations, labels map[string]bool
}

func lockedOf(class *v1alpha1.ListenerClass) locked {
	lk := locked{spec: map[string]bool{}, annotations: map[string]bool{}, labels: map[string]bool{}}
	for _, f := range class.Spec.LockedServiceFields {
		kind, key, ok := ParseLocked(f)
		if !ok {
			continue
		}
		switch kind {
		case LockedSpec:
			lk.spec[key] = true
		case LockedAnnotation:
			lk.annotations[key] = true
		case LockedLabel:
			lk.labels[key] = true
		}
	}
	return lk
}

func restore(into, from map[string]any, key string) {
	if v, ok := from[key]; ok {
		into[key] = runtime.DeepCopyJSONValue(v)
	} else {
		delete(into, key)
	}
}

// child returns obj[key] as an object, creating it (in obj) if absent.
func child(obj map[string]any, key string) map[string]any {
	m, ok := obj[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj[key] = m
		return m
	}
	// MergePatch shares unchanged subtrees; copy before writing.
	m = maps.Clone(m)
	obj[key] = m
	return m
}

func sliceOf(v any) []any {
	s, _ := v.([]any)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SortErrors orders errors by field path, so that messages built from map
// iteration are stable (api/validation sorts its errors with it too).
func SortErrors(errs field.ErrorList) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
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

// routeGroup is the Gateway API group: its routes are what a gateway
// class makes, and no Listener override reaches them.
const routeGroup = "gateway.networking.k8s.io"

// RouteOverride reports whether an objectOverrides item targets a Gateway
// API object (a route of any kind, a Gateway), and names its kind.
func RouteOverride(o map[string]any) (kind string, ok bool) {
	u := unstructured.Unstructured{Object: o}
	gv := u.GetAPIVersion()
	if i := strings.Index(gv, "/"); i < 0 || gv[:i] != routeGroup {
		return "", false
	}
	return u.GetKind(), true
}

// Matches reports whether a Listener's objectOverride targets the Service
// it generates: same apiVersion, kind and name, and its namespace or none.
func Matches(o map[string]any, svcName, namespace string) bool {
	u := unstructured.Unstructured{Object: o}
	return u.GetAPIVersion() == "v1" && u.GetKind() == "Service" && u.GetName() == svcName &&
		(u.GetNamespace() == "" || u.GetNamespace() == namespace)
}

// MergePatch applies patch to target with JSON merge patch (RFC 7386)
// semantics: objects merge key by key, null deletes, anything else
// (lists included) replaces.
func MergePatch(target, patch any) any {
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
		t[k] = MergePatch(t[k], v)
	}
	return t
}

// Locked field kinds of spec.lockedServiceFields.
const (
	LockedSpec       = "spec"
	LockedAnnotation = "annotation"
	LockedLabel      = "label"
)

// ParseLocked reads one entry of a class's spec.lockedServiceFields:
// "spec.<field>" (a field of the Service's spec, by its JSON name),
// "metadata.annotations[<key>]" or "metadata.labels[<key>]".
func ParseLocked(s string) (kind, key string, ok bool) {
	switch {
	case strings.HasPrefix(s, "spec."):
		key = strings.TrimPrefix(s, "spec.")
		_, known := SpecFields[key]
		return LockedSpec, key, known
	case strings.HasPrefix(s, "metadata.annotations[") && strings.HasSuffix(s, "]"):
		key = strings.TrimSuffix(strings.TrimPrefix(s, "metadata.annotations["), "]")
		return LockedAnnotation, key, key != ""
	case strings.HasPrefix(s, "metadata.labels[") && strings.HasSuffix(s, "]"):
		key = strings.TrimSuffix(strings.TrimPrefix(s, "metadata.labels["), "]")
		return LockedLabel, key, key != ""
	}
	return "", "", false
}
