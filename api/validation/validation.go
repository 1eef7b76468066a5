package validation

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// MaxClaimSize is the largest storage request a listener claim may make. The
// volume holds a handful of small files; a large request is a copied template
// that asks for storage it will never get.
const MaxClaimSize = "1Gi"

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

// classNotFound is the denial for a ListenerClass name that does not exist.
func classNotFound(path *field.Path, name string, classes ClassNames) *field.Error {
	return field.Invalid(path, name, fmt.Sprintf("ListenerClass %q not found; available: %s", name, classes))
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
	if !claims.IsListenerStorageClass(spec.StorageClassName) {
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
			if claims.Requested(t.Annotations, t.Spec.StorageClassName) {
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

// ContainerPorts is how many ports a container declares.
type ContainerPorts struct {
	Name  string
	Ports int
}

// PortsForOwnListener refuses a pod (template) whose listener volumes get
// Listeners of their own (claims, by volume or template name) while no
// container declares a port: such a Listener's ports are its pods'
// container ports, and a Service without ports cannot be made, so the pod
// would wait in ContainerCreating for good. path is the containers list.
func PortsForOwnListener(claims []string, containers []ContainerPorts, path *field.Path) field.ErrorList {
	for _, c := range containers {
		if c.Ports > 0 {
			return nil
		}
	}
	first := "the container that serves"
	if len(containers) > 0 {
		first = fmt.Sprintf("container %q (or another)", containers[0].Name)
	}
	return field.ErrorList{field.Required(path, fmt.Sprintf(
		"listener volume %s gets a Listener of its own whose ports are the containers' ports, and no container declares one, so its Service cannot be made and the pod would never start; "+
			"declare the served ports on %s, e.g. ports: [{name: http, containerPort: 8080}], or share an existing Listener that has ports with the %s annotation",
		strings.Join(quoteAll(claims), ", "), first, v1alpha1.AnnotationListenerName))}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// ClaimBinding refuses changing the listener annotations of a claim that is
// bound to a volume: the volume was provisioned, and is published, for the
// Listener the annotations named then, so a change would leave the pod an
// endpoint of one Listener while its volume and PodListeners name another.
// Like the API server's own immutable fields, the fix is a new claim.
func ClaimBinding(oldAnn, newAnn map[string]string, volumeName string) field.ErrorList {
	if volumeName == "" {
		return nil
	}
	var errs field.ErrorList
	for _, key := range []string{v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName} {
		was, had := oldAnn[key]
		is, has := newAnn[key]
		if was == is && had == has {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(key), fmt.Sprintf(
			"is immutable once the claim is bound (to volume %s, provisioned for the Listener it named then); to use another Listener or class, delete the claim and create it again (a StatefulSet's claim: delete the claim and its pod; an ephemeral volume: create a new pod)", volumeName)))
	}
	return errs
}

// NameCollisions refuses a Listener named name whose Service name or pod
// selector label equals that of another Listener of the namespace (others):
// names that do not fit are shortened to "<prefix>-<10 hex>"
// (api/names), and a Listener may be named exactly like another's shortened
// name. path is where the name is (metadata.name of a Listener, or of the
// claim whose own Listener it names).
func NameCollisions(name string, others []string, path *field.Path) field.ErrorList {
	svc, label := names.ServiceName(name), names.PodSelectorLabel(name)
	for _, o := range others {
		if o == name {
			continue
		}
		switch {
		case names.ServiceName(o) == svc:
			return field.ErrorList{field.Invalid(path, name, fmt.Sprintf("Listener %q already has the Service name %q, which this name would get too; choose another name", o, svc))}
		case names.PodSelectorLabel(o) == label:
			return field.ErrorList{field.Invalid(path, name, fmt.Sprintf("Listener %q already selects its pods by the label %q, which this name would get too; choose another name", o, label))}
		}
	}
	return nil
}
