package validation

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// MaxClaimSize is the largest storage request a listener claim may make. The
// volume holds a handful of small files; a large request is a copied template
// that asks for storage it will never get.
const MaxClaimSize = "1Gi"

// maxUsersListed bounds the users named in a deletion denial, so that a class
// used by thousands of Listeners still yields a readable message.
const maxUsersListed = 10

// ClassNames is the sorted set of existing ListenerClass names.
type ClassNames []string

// NewClassNames returns the sorted set of the given names.
func NewClassNames(names ...string) ClassNames {
	c := append(ClassNames(nil), names...)
	sort.Strings(c)
	return c
}

// Has reports whether a ListenerClass of that name exists.
func (c ClassNames) Has(name string) bool {
	i := sort.SearchStrings(c, name)
	return i < len(c) && c[i] == name
}

// String lists the names for a message.
func (c ClassNames) String() string {
	if len(c) == 0 {
		return "none (create a ListenerClass first)"
	}
	return strings.Join(c, ", ")
}

// ClaimFacts are what a claim's validity depends on besides the claim.
type ClaimFacts struct {
	// Namespace is the claim's namespace (for messages).
	Namespace string
	// Classes are the existing ListenerClasses.
	Classes ClassNames
	// Listeners says, for each Listener name the claims refer to, whether
	// that Listener exists in Namespace. A name missing from the map counts
	// as not found.
	Listeners map[string]bool
	// DefaultClass is the class a claim that names none will get when it is
	// created ("" if there is none). Claim templates (of StatefulSets and
	// ephemeral volumes) are checked before the claims exist, so one that
	// names neither a class nor a Listener is fine when there is a default.
	DefaultClass string
}

// IsListenerClaim reports whether a claim with these annotations and storage
// class asks for a listener volume.
func IsListenerClaim(annotations map[string]string, storageClassName *string) bool {
	if storageClassName != nil && *storageClassName == v1alpha1.StorageClassName {
		return true
	}
	_, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	_, hasName := annotations[v1alpha1.AnnotationListenerName]
	return hasClass || hasName
}

// classNotFound is the denial for a ListenerClass name that does not exist.
func classNotFound(path *field.Path, name string, classes ClassNames) *field.Error {
	return field.Invalid(path, name, fmt.Sprintf("ListenerClass %q not found; available: %s", name, classes))
}

// ListenerClass checks a ListenerClass for what would break the Services
// made from it (the reconciler relies on this function alone) and for
// serviceOverrides that would take over what the operator manages. Fields
// that only apply to other service types are not errors but warnings (see
// ListenerClassWarnings): the Stackable operator accepted and ignored them,
// and classes stored by it must keep working after a switch.
func ListenerClass(lc *v1alpha1.ListenerClass) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := &lc.Spec
	if s.LoadBalancerClass != nil && s.ServiceType == v1alpha1.ServiceTypeLoadBalancer {
		for _, msg := range utilvalidation.IsQualifiedName(*s.LoadBalancerClass) {
			errs = append(errs, field.Invalid(spec.Child("loadBalancerClass"), *s.LoadBalancerClass, msg))
		}
	}
	errs = append(errs, apivalidation.ValidateAnnotations(s.ServiceAnnotations, spec.Child("serviceAnnotations"))...)
	if s.ServiceOverrides != nil {
		errs = append(errs, serviceOverrides(s.ServiceOverrides, s.ServiceType, spec.Child("serviceOverrides"))...)
	}
	errs = append(errs, hostnamePolicy(s.Hostname, spec.Child("hostname"))...) // hostname.go
	return errs
}

// ListenerClassWarnings lists the fields of a ListenerClass that have no
// effect with its serviceType. The Stackable listener-operator accepted (and,
// before its 25.11 release, defaulted serviceExternalTrafficPolicy: Local on
// every class, ClusterIP included), so such classes are admitted with a
// warning that says what to remove, never refused.
func ListenerClassWarnings(lc *v1alpha1.ListenerClass) []string {
	var warnings []string
	s := &lc.Spec
	if s.LoadBalancerClass != nil && s.ServiceType != v1alpha1.ServiceTypeLoadBalancer {
		warnings = append(warnings, fmt.Sprintf("spec.loadBalancerClass: %q is ignored: it only applies to serviceType LoadBalancer, not %s; remove it or set serviceType: LoadBalancer", *s.LoadBalancerClass, s.ServiceType))
	}
	if s.PinnedNodePorts != nil && *s.PinnedNodePorts && s.ServiceType != v1alpha1.ServiceTypeNodePort {
		warnings = append(warnings, fmt.Sprintf("spec.pinnedNodePorts: true is ignored: only NodePort addresses depend on the node, so pinning needs serviceType NodePort, not %s; set pinnedNodePorts: false or serviceType: NodePort", s.ServiceType))
	}
	if s.ServiceExternalTrafficPolicy != nil && s.ServiceType == v1alpha1.ServiceTypeClusterIP {
		warnings = append(warnings, fmt.Sprintf("spec.serviceExternalTrafficPolicy: %q is ignored: it only applies to NodePort and LoadBalancer services; remove it or change serviceType", *s.ServiceExternalTrafficPolicy))
	}
	return warnings
}

// serviceOverrides refuses overrides of what the operator must control: the
// Service's identity, its type (spec.serviceType decides it, and addresses
// are derived from it) and its selector (it selects the pods that mount the
// Listener's volumes).
func serviceOverrides(raw *runtime.RawExtension, serviceType v1alpha1.ServiceType, path *field.Path) field.ErrorList {
	var o struct {
		APIVersion *string `json:"apiVersion"`
		Kind       *string `json:"kind"`
		Metadata   struct {
			Name      *string `json:"name"`
			Namespace *string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Type     *string         `json:"type"`
			Selector json.RawMessage `json:"selector"`
		} `json:"spec"`
	}
	if len(raw.Raw) == 0 {
		return nil
	}
	if json.Unmarshal(raw.Raw, &o) != nil {
		return field.ErrorList{field.Invalid(path, string(raw.Raw), `must be a partial Service object, e.g. {"spec": {"externalTrafficPolicy": "Local"}}`)}
	}
	var errs field.ErrorList
	if o.APIVersion != nil && *o.APIVersion != "v1" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), *o.APIVersion, `overrides apply to a v1 Service; remove apiVersion or set it to "v1"`))
	}
	if o.Kind != nil && *o.Kind != "Service" {
		errs = append(errs, field.Invalid(path.Child("kind"), *o.Kind, `overrides apply to a Service; remove kind or set it to "Service"`))
	}
	if o.Metadata.Name != nil {
		errs = append(errs, field.Forbidden(path.Child("metadata", "name"), "the operator names each Listener's Service; remove metadata.name"))
	}
	if o.Metadata.Namespace != nil {
		errs = append(errs, field.Forbidden(path.Child("metadata", "namespace"), "a Service lives in its Listener's namespace; remove metadata.namespace"))
	}
	if o.Spec.Type != nil && *o.Spec.Type != string(serviceType) {
		errs = append(errs, field.Forbidden(path.Child("spec", "type"),
			fmt.Sprintf("would change the Service type from %s to %s behind the operator's back; set spec.serviceType: %s instead", serviceType, *o.Spec.Type, *o.Spec.Type)))
	}
	if len(o.Spec.Selector) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "selector"),
			"the operator selects the pods that mount the Listener's volume; remove spec.selector (a Listener's spec.extraPodSelectorLabels narrows the selection)"))
	}
	return errs
}

// ListenerClassDeletion refuses deleting the ListenerClass name while users
// (e.g. "Listener ns/name", "PersistentVolumeClaim ns/name") refer to it.
func ListenerClassDeletion(name string, users []string) field.ErrorList {
	if len(users) == 0 {
		return nil
	}
	listed := users
	more := ""
	if len(listed) > maxUsersListed {
		listed = listed[:maxUsersListed]
		more = fmt.Sprintf(" and %d more", len(users)-maxUsersListed)
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"),
		fmt.Sprintf("ListenerClass %q is still used by %s%s; delete them or move them to another class first", name, strings.Join(listed, ", "), more))}
}

// Listener checks a Listener: its class exists, its ports can become Service
// ports, and its extra selector labels are labels.
func Listener(l *v1alpha1.Listener, classes ClassNames) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if c := l.Spec.ClassName; c != nil {
		p := spec.Child("className")
		switch {
		case *c == "":
			errs = append(errs, field.Required(p, "name a ListenerClass, one of: "+classes.String()))
		case !classes.Has(*c):
			errs = append(errs, classNotFound(p, *c, classes))
		}
	}
	errs = append(errs, ports(l.Spec.Ports, spec.Child("ports"))...)
	sel := spec.Child("extraPodSelectorLabels")
	errs = append(errs, metav1validation.ValidateLabels(l.Spec.ExtraPodSelectorLabels, sel)...)
	for k := range l.Spec.ExtraPodSelectorLabels {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
			errs = append(errs, field.Invalid(sel.Key(k), k,
				fmt.Sprintf("labels starting with %q are set by the operator on the pods of each Listener; pick another key", v1alpha1.PodSelectorLabelPrefix)))
		}
	}
	if pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok {
		p := field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationStatefulSetPod)
		if msgs := utilvalidation.IsValidLabelValue(pod); pod == "" || len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, pod, "name the StatefulSet pod that the Service selects by its "+v1alpha1.LabelStatefulSetPodName+" label, or remove the annotation to select pods by the operator's label"))
		}
	}
	for i, o := range l.Spec.ObjectOverrides {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		p := spec.Child("objectOverrides").Index(i)
		if json.Unmarshal(o.Raw, &head) != nil {
			errs = append(errs, field.Invalid(p, string(o.Raw), "must be a partial object with apiVersion, kind and metadata, e.g. {\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"...\"}}"))
			continue
		}
		if head.APIVersion == "" || head.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), "an override is matched to a generated object by apiVersion, kind, name and namespace; set apiVersion and kind (e.g. v1, Service)"))
		}
	}
	return errs
}

// ports checks that ports can become the ports of one Service: valid, unique
// by name and unique by number and protocol.
func ports(ports []v1alpha1.ListenerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	byName := make(map[string]int, len(ports))
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	byNumber := make(map[key]int, len(ports))
	for i, p := range ports {
		pp := path.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
		}
		if first, dup := byName[p.Name]; dup {
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name,
				fmt.Sprintf("spec.ports[%d] already has this name; pods read ports by name, so rename one of them", first)))
		} else {
			byName[p.Name] = i
		}
		for _, msg := range utilvalidation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), p.Port, msg))
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		switch proto {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, []string{"TCP", "UDP", "SCTP"}))
		}
		k := key{p.Port, proto}
		if first, dup := byNumber[k]; dup {
			errs = append(errs, field.Invalid(pp.Child("port"), p.Port,
				fmt.Sprintf("spec.ports[%d] (%q) already exposes %d/%s and a Service cannot expose it twice; remove one or change its number", first, ports[first].Name, p.Port, proto)))
		} else {
			byNumber[k] = i
		}
	}
	return errs
}

// Claim checks a listener claim, a PersistentVolumeClaim or a claim template
// given by its annotations and spec. path is where the claim sits in the
// object under admission (nil for a PersistentVolumeClaim itself, e.g.
// spec.volumeClaimTemplates[0] for a StatefulSet).
func Claim(annotations map[string]string, spec *corev1.PersistentVolumeClaimSpec, facts ClaimFacts, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ann := childPath(path, "metadata", "annotations")
	sp := childPath(path, "spec")
	class, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	name, hasName := annotations[v1alpha1.AnnotationListenerName]
	if !hasClass && !hasName && facts.DefaultClass != "" {
		class, hasClass = facts.DefaultClass, true
	}
	switch {
	case hasClass && hasName:
		errs = append(errs, field.Invalid(ann.Key(v1alpha1.AnnotationListenerName), name,
			fmt.Sprintf("set only one of %s (a Listener for this claim) and %s (an existing Listener shared by several claims)", v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName)))
	case !hasClass && !hasName:
		errs = append(errs, field.Required(ann.Key(v1alpha1.AnnotationListenerClass),
			fmt.Sprintf("a listener claim needs %s (one of: %s) or %s (an existing Listener), and no default ListenerClass is set (annotate one with %s: \"true\")",
				v1alpha1.AnnotationListenerClass, facts.Classes, v1alpha1.AnnotationListenerName, v1alpha1.AnnotationDefaultClass)))
	case hasClass && class == "":
		errs = append(errs, field.Required(ann.Key(v1alpha1.AnnotationListenerClass), "name a ListenerClass, one of: "+facts.Classes.String()))
	case hasClass && !facts.Classes.Has(class):
		errs = append(errs, classNotFound(ann.Key(v1alpha1.AnnotationListenerClass), class, facts.Classes))
	case hasName && name == "":
		errs = append(errs, field.Required(ann.Key(v1alpha1.AnnotationListenerName), "name a Listener in namespace "+facts.Namespace))
		// A shared Listener that does not exist yet is admitted with a
		// warning (MissingListener): it may come later in the same apply.
	}
	if spec == nil {
		return append(errs, field.Required(sp, "a claim needs a spec"))
	}
	if spec.StorageClassName == nil || *spec.StorageClassName != v1alpha1.StorageClassName {
		var got any = "<unset>"
		if spec.StorageClassName != nil {
			got = *spec.StorageClassName
		}
		errs = append(errs, field.Invalid(sp.Child("storageClassName"), got,
			fmt.Sprintf("listener claims use storageClassName %q; set it, or remove the %s and %s annotations", v1alpha1.StorageClassName, v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName)))
	}
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(sp.Child("accessModes"), "set accessModes: [ReadWriteMany] (every pod of the claim reads the same addresses)"))
	}
	for i, m := range spec.AccessModes {
		switch m {
		case corev1.ReadWriteOnce, corev1.ReadWriteMany, corev1.ReadOnlyMany, corev1.ReadWriteOncePod:
		default:
			errs = append(errs, field.NotSupported(sp.Child("accessModes").Index(i), m, []string{"ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"}))
		}
	}
	if spec.VolumeMode != nil && *spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(sp.Child("volumeMode"), *spec.VolumeMode, []string{string(corev1.PersistentVolumeFilesystem)}))
	}
	if spec.DataSource != nil || spec.DataSourceRef != nil {
		p := sp.Child("dataSource")
		if spec.DataSource == nil {
			p = sp.Child("dataSourceRef")
		}
		errs = append(errs, field.Forbidden(p, "a listener volume holds addresses that the operator writes for the pod and cannot be cloned or restored; remove it"))
	}
	if spec.Selector != nil {
		errs = append(errs, field.Forbidden(sp.Child("selector"), "listener volumes are provisioned for each claim and never pre-exist; remove spec.selector"))
	}
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(resource.MustParse(MaxClaimSize)) > 0 {
		errs = append(errs, field.Invalid(sp.Child("resources", "requests", "storage"), q.String(),
			"a listener volume holds a few small files; request at most "+MaxClaimSize+` ("1" is customary)`))
	}
	return errs
}

// Volumes checks the volumes of a pod (or pod template): inline CSI volumes
// of the listener driver are refused (the driver serves claims only), and
// ephemeral volumes of the listener storage class are checked as claims.
// path is the volumes list, e.g. spec.template.spec.volumes.
func Volumes(volumes []corev1.Volume, facts ClaimFacts, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range volumes {
		v := &volumes[i]
		switch {
		case v.CSI != nil && v.CSI.Driver == v1alpha1.DriverName:
			errs = append(errs, field.Invalid(path.Index(i).Child("csi", "driver"), v.CSI.Driver, InlineVolumeMessage))
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			t := v.Ephemeral.VolumeClaimTemplate
			if IsListenerClaim(t.Annotations, t.Spec.StorageClassName) {
				errs = append(errs, Claim(t.Annotations, &t.Spec, facts, path.Index(i).Child("ephemeral", "volumeClaimTemplate"))...)
			}
		}
	}
	return errs
}

// InlineVolumeMessage explains why an inline CSI volume of the listener
// driver is refused and shows the form that works.
const InlineVolumeMessage = `inline CSI volumes of the listener driver are not supported; use a generic ephemeral volume instead: ` +
	`ephemeral: {volumeClaimTemplate: {metadata: {annotations: {` + v1alpha1.AnnotationListenerClass + `: <class>}}, spec: {storageClassName: ` +
	v1alpha1.StorageClassName + `, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}}}`

func childPath(path *field.Path, name string, more ...string) *field.Path {
	if path == nil {
		return field.NewPath(name, more...)
	}
	return path.Child(name, more...)
}

// ListenerClassPolicy lists what a ListenerClass decides about the Service
// of each of its Listeners and a Listener's spec.objectOverrides may
// therefore not change: ListenerClasses are cluster policy, written by
// administrators; Listeners are written by tenants. Besides these fields,
// the keys of the class's serviceAnnotations and every field the class's
// serviceOverrides sets are the class's.
var ListenerClassPolicy = []string{
	"spec.type", "spec.selector", "spec.loadBalancerClass", "spec.allocateLoadBalancerNodePorts",
	"spec.externalTrafficPolicy", "spec.internalTrafficPolicy", "spec.loadBalancerSourceRanges",
}

// ListenerOverrides refuses the parts of a Listener's objectOverrides that
// would change, on the Listener's Service, what its ListenerClass class
// decides (see ListenerClassPolicy). Overrides of other objects than a v1
// Service are not the class's business.
func ListenerOverrides(l *v1alpha1.Listener, class *v1alpha1.ListenerClass) field.ErrorList {
	var errs field.ErrorList
	classSpec, classAnn := classOverrideKeys(class)
	for i, o := range l.Spec.ObjectOverrides {
		var svc struct {
			APIVersion string                     `json:"apiVersion"`
			Kind       string                     `json:"kind"`
			Metadata   map[string]json.RawMessage `json:"metadata"`
			Spec       map[string]json.RawMessage `json:"spec"`
		}
		if json.Unmarshal(o.Raw, &svc) != nil || svc.APIVersion != "v1" || svc.Kind != "Service" {
			continue
		}
		p := field.NewPath("spec", "objectOverrides").Index(i)
		for _, f := range ListenerClassPolicy {
			key := strings.TrimPrefix(f, "spec.")
			if raw, ok := svc.Spec[key]; ok {
				errs = append(errs, field.Invalid(p.Child("spec", key), rawValue(raw), classDecides(class.Name, f)))
			}
		}
		for key, raw := range svc.Spec {
			if classSpec[key] && !slicesContains(ListenerClassPolicy, "spec."+key) {
				errs = append(errs, field.Invalid(p.Child("spec", key), rawValue(raw),
					fmt.Sprintf("ListenerClass %q sets spec.%s in its serviceOverrides, and a Listener may not change what its class decides; remove it, or use a class that allows it", class.Name, key)))
			}
		}
		var ann map[string]json.RawMessage
		if raw, ok := svc.Metadata["annotations"]; ok && json.Unmarshal(raw, &ann) == nil {
			for key, raw := range ann {
				if classAnn[key] {
					errs = append(errs, field.Invalid(p.Child("metadata", "annotations").Key(key), rawValue(raw),
						fmt.Sprintf("ListenerClass %q sets this Service annotation, and a Listener may not change what its class decides; remove it, or use a class that sets what you need", class.Name)))
				}
			}
		}
	}
	sortErrors(errs)
	return errs
}

// classDecides is the denial of an override of field f of a class's Service.
func classDecides(class, f string) string {
	return fmt.Sprintf("%s of a Listener's Service is decided by its ListenerClass %q (cluster policy), not by the Listener; remove it, or use a ListenerClass that sets what you need", f, class)
}

// classOverrideKeys are the Service spec fields and the annotations that
// the class sets, through serviceAnnotations and serviceOverrides.
func classOverrideKeys(class *v1alpha1.ListenerClass) (spec, annotations map[string]bool) {
	spec, annotations = map[string]bool{}, map[string]bool{}
	for k := range class.Spec.ServiceAnnotations {
		annotations[k] = true
	}
	if class.Spec.ServiceOverrides == nil || len(class.Spec.ServiceOverrides.Raw) == 0 {
		return spec, annotations
	}
	var o struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"metadata"`
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(class.Spec.ServiceOverrides.Raw, &o) != nil {
		return spec, annotations
	}
	for k := range o.Spec {
		spec[k] = true
	}
	for k := range o.Metadata.Annotations {
		annotations[k] = true
	}
	return spec, annotations
}

// rawValue is an override's value for a message: a JSON string unquoted,
// anything else as written.
func rawValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// sortErrors orders errors by field path, so that messages built from map
// iteration are stable.
func sortErrors(errs field.ErrorList) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
}

// OptIn checks the annotations of an opted-in object (a StatefulSet, a bare
// pod, or a pod template labelled listeners.stackable.tech/enabled) at path:
// they pick the listener volume's class or shared Listener, and the class
// must exist (or a default must be set). A shared Listener that does not
// exist yet is not an error (see MissingListener).
func OptIn(annotations map[string]string, facts ClaimFacts, path *field.Path) field.ErrorList {
	name, hasName := annotations[v1alpha1.AnnotationListenerName]
	class, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	switch {
	case hasName && name != "":
		return nil
	case hasName:
		return field.ErrorList{field.Required(path.Key(v1alpha1.AnnotationListenerName), "name a Listener in namespace "+facts.Namespace)}
	case hasClass && class == "":
		return field.ErrorList{field.Required(path.Key(v1alpha1.AnnotationListenerClass), "name a ListenerClass, one of: "+facts.Classes.String())}
	case hasClass && !facts.Classes.Has(class):
		return field.ErrorList{classNotFound(path.Key(v1alpha1.AnnotationListenerClass), class, facts.Classes)}
	case !hasClass && facts.DefaultClass == "":
		return field.ErrorList{field.Required(path.Key(v1alpha1.AnnotationListenerClass),
			fmt.Sprintf("no default ListenerClass is set, so name one (available: %s), or name a shared Listener with %s", facts.Classes, v1alpha1.AnnotationListenerName))}
	}
	return nil
}

// MissingListener is the warning for a claim (or claim template) that names
// a shared Listener which does not exist yet: it is admitted, since the
// Listener may come later in the same apply, Helm release or sync, and its
// pods wait in ContainerCreating until it does. "" when the claim names no
// Listener or it exists.
func MissingListener(annotations map[string]string, facts ClaimFacts) string {
	name := annotations[v1alpha1.AnnotationListenerName]
	if name == "" || facts.Listeners[name] {
		return ""
	}
	return fmt.Sprintf("Listener %q does not exist in namespace %q yet: pods that mount this volume wait in ContainerCreating until it is created", name, facts.Namespace)
}

// OptInExisting is the denial for labelling an existing StatefulSet that
// has no listener claim template listeners.stackable.tech/enabled: claim
// templates are immutable, so the label alone would do nothing.
func OptInExisting(name string, path *field.Path) *field.Error {
	return field.Forbidden(path.Key(v1alpha1.LabelEnabled), fmt.Sprintf(
		"StatefulSet %q has no listener volume claim template, and claim templates cannot be added to an existing StatefulSet, so this label would do nothing; "+
			"to opt it in, run `kubectl delete statefulset %s --cascade=orphan` and apply it again with the label: its pods keep running and are adopted by the new StatefulSet", name, name))
}

// ForeignListenerVolume is the denial for an opted-in StatefulSet or pod
// whose pod (template) has a volume named like the listener volume that is
// not one: the listener volume cannot be added under its name.
func ForeignListenerVolume(path *field.Path) *field.Error {
	return field.Invalid(path.Child("name"), v1alpha1.VolumeName, fmt.Sprintf(
		"the listener volume is added under the name %q, which this volume (not a listener volume) already uses; rename it, or make it a listener volume", v1alpha1.VolumeName))
}
