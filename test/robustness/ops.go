package robustness

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Kind is what an operation does.
type Kind string

// The operations. The administrator puts and deletes classes and deletes
// Services; a tenant puts and deletes Listeners and claims in its own
// namespace.
const (
	PutClass       Kind = "PutClass"       // create or replace class Class
	DeleteClass    Kind = "DeleteClass"    // delete class Class
	DeleteService  Kind = "DeleteService"  // delete the Service of Listener Name of tenant Tenant
	PutListener    Kind = "PutListener"    // tenant Tenant creates or replaces Listener Name
	DeleteListener Kind = "DeleteListener" // tenant Tenant deletes Listener Name
	PutClaim       Kind = "PutClaim"       // tenant Tenant creates listener claim Name (kept if it exists)
	DeleteClaim    Kind = "DeleteClaim"    // tenant Tenant deletes claim Name

	// Nodes and workloads (pods.go).
	PutNodeAddress    Kind = "PutNodeAddress"    // the administrator sets (Address "" removes) Node's address annotation
	PutPod            Kind = "PutPod"            // tenant Tenant creates pod Name with a listener volume (of claim Claim, else ephemeral of class Class)
	DeletePod         Kind = "DeletePod"         // tenant Tenant deletes pod Name
	PutStatefulSet    Kind = "PutStatefulSet"    // tenant Tenant creates opted-in StatefulSet Name of class Class with Replicas (kept if it exists)
	ScaleStatefulSet  Kind = "ScaleStatefulSet"  // tenant Tenant scales StatefulSet Name to Replicas
	DeleteStatefulSet Kind = "DeleteStatefulSet" // tenant Tenant deletes StatefulSet Name
	// Faults (faults.go), the administrator's.
	RestartOperator Kind = "RestartOperator" // stop the operator's manager, start a new one
	WebhooksOff     Kind = "WebhooksOff"     // delete the webhook configurations: writes are admitted unchecked
	WebhooksOn      Kind = "WebhooksOn"      // make them again, then restart the operator
	// Quotas (quota.go), the administrator's.
	PutQuota  Kind = "PutQuota"  // cap tenant Tenant's Services, node ports and load balancers at what it has
	LiftQuota Kind = "LiftQuota" // remove that cap, then wait until the Listeners it held back have their Services
)

// Op is one operation. Only the fields its Kind reads are set, so that a
// sequence prints (GoString) as short table rows.
type Op struct {
	Kind   Kind
	Tenant int    // 0 or 1: whose namespace (tenant operations, DeleteService)
	Name   string // the Listener or claim
	Class  int    // the class slot (PutClass, DeleteClass, PutListener, PutClaim)

	// PutClass
	Type     v1alpha1.ServiceType
	Range    bool                        // spec.nodePortRange: the slot's band of rangeSize ports
	Template int                         // spec.hostname: templates[Template-1]; 0 none
	Mode     v1alpha1.TenantMetadataMode // spec.tenantMetadata.mode ("" leaves tenantMetadata unset unless Allow)
	Allow    bool                        // spec.tenantMetadata allows team.robust.test/* (labels and annotations)
	Network  string                      // spec.serviceAnnotations[networkKey] ("" none)
	Gate     bool                        // spec.podReadiness Gate: pods of the class get the readiness gate (podgate.go)

	// PutListener, PutClaim
	NoClass   bool     // PutListener: spec.className unset (Class is ignored)
	Ports     []int32  // spec.ports p0, p1, …
	Labels    []string // "key=value" on the Listener (or claim)
	Overrides []string // one objectOverrides entry: "annotations:key=value", "labels:key=value", "spec:field=value"

	// PutClass: spec.nodeAddress Annotation (NodePort classes read the
	// node address annotation first).
	NodeAnnotation bool
	// PutNodeAddress: which of the world's nodes, and the annotation's value.
	Node    int
	Address string
	// PutPod: the existing claim the pod's volume names ("" an ephemeral volume).
	Claim string
	// PutStatefulSet, ScaleStatefulSet.
	Replicas int
	// PutShareClass: the sharing range's size (0: none); PutStatefulSet:
	// the Listener the pods share ("" none). share.go.
	Share     int
	Bootstrap string
	// PutGateway, DeleteGateway: the Gateway slot and its sections
	// ("<name>:<kind>", gateway.go); PutClass: spec.gateway's parents
	// ("g<slot>/<section>").
	Gateway  int
	Sections []string
	Parents  []string
	// PutClass: spec.gateway.routeKind TCPRoute, Parents the ordered
	// block of its sections (tcp.go).
	TCP bool
}

// networkKey is the exposure annotation classes set and tenants try to.
const networkKey = "metallb.io/address-pool"

// rangeSize is how many node ports a range class has: few, so that
// tenants exhaust it.
const rangeSize = 4

// templates are the hostname templates a class may have, %s the run's
// domain; the last two can give two Listeners one name (the first two
// overlap only on names these tenants do not use).
var templates = []struct {
	text                     string
	withoutNamespace, ambigu bool
}{
	{text: "{listener}.{namespace}.%s"},
	{text: "{namespace}.{listener}.%s"},
	{text: "{listener}-{namespace}.%s", ambigu: true},
	{text: "{listener}.%s", withoutNamespace: true},
}

// GoString prints op as a composite literal of its set fields, ready to
// paste into a table of regression tests.
func (op Op) GoString() string {
	v := reflect.ValueOf(op)
	var fields []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		name := v.Type().Field(i).Name
		switch x := f.Interface().(type) {
		case Kind:
			fields = append(fields, name+": "+string(x))
		case v1alpha1.ServiceType, v1alpha1.TenantMetadataMode, string:
			fields = append(fields, fmt.Sprintf("%s: %q", name, fmt.Sprint(x)))
		case []string:
			fields = append(fields, fmt.Sprintf("%s: %#v", name, x))
		case []int32:
			fields = append(fields, fmt.Sprintf("%s: %#v", name, x))
		default:
			fields = append(fields, fmt.Sprintf("%s: %v", name, x))
		}
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// World names what one history's operations act on: its own classes,
// tenant namespaces and DNS domain, so that histories run one after
// another in one control plane do not meet.
type World struct {
	Prefix  string    // of the class names and tenant namespaces
	Tenants [2]string // the tenants' namespaces
	Users   [2]string // the tenants' user names
	Domain  string    // of the hostname templates
	// RangeBase is the first node port of slot 0's range.
	RangeBase int32
	// Gateway: Traefik runs, and the world has a namespace of Gateways
	// (gateway.go).
	Gateway bool
}

// NewWorld is the world of history number n.
func NewWorld(n int) World {
	p := fmt.Sprintf("rb%d", n)
	return World{
		Prefix:    p,
		Tenants:   [2]string{p + "-tenant-a", p + "-tenant-b"},
		Users:     [2]string{"tenant-a", "tenant-b"},
		Domain:    p + ".robust.test",
		RangeBase: 30100 + int32(n%40)*50,
	}
}

// ClassName is the name of class slot i.
func (w World) ClassName(i int) string { return fmt.Sprintf("%s-c%d", w.Prefix, i) }

// Range is class slot i's node-port range.
func (w World) Range(i int) v1alpha1.NodePortRange {
	from := w.RangeBase + int32(i)*10
	return v1alpha1.NodePortRange{From: from, To: from + rangeSize - 1}
}

// Class is the ListenerClass a PutClass makes.
func (w World) Class(op Op) *v1alpha1.ListenerClass {
	spec := v1alpha1.ListenerClassSpec{ServiceType: op.Type}
	if op.Range {
		r := w.Range(op.Class)
		spec.NodePortRange = &r
	}
	if op.Template > 0 {
		t := templates[op.Template-1]
		spec.Hostname = &v1alpha1.HostnamePolicy{Template: fmt.Sprintf(t.text, w.Domain)}
		if t.withoutNamespace {
			spec.Hostname.AllowWithoutNamespace = ptr.To(true)
		}
		if t.ambigu {
			spec.Hostname.AllowAmbiguous = ptr.To(true)
		}
	}
	if op.Mode != "" || op.Allow {
		spec.TenantMetadata = &v1alpha1.TenantMetadataPolicy{Mode: op.Mode}
		if op.Allow {
			spec.TenantMetadata.Labels = []string{teamPrefix + "*"}
			spec.TenantMetadata.Annotations = []string{teamPrefix + "*"}
		}
	}
	if op.Network != "" {
		spec.ServiceAnnotations = map[string]string{networkKey: op.Network}
	}
	if op.NodeAnnotation {
		spec.NodeAddress = v1alpha1.NodeAddressAnnotation
	}
	if op.Gate {
		spec.PodReadiness = ptr.To(v1alpha1.PodReadinessGate)
	}
	spec.Gateway = w.gatewayParents(op)
	shareSpec(op, &spec)
	return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: w.ClassName(op.Class)}, Spec: spec}
}

// teamPrefix is the key prefix a class allows tenants with Allow.
const teamPrefix = "team.robust.test/"

// Listener is the Listener a PutListener makes.
func (w World) Listener(op Op) (*v1alpha1.Listener, error) {
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant], Labels: pairs(op.Labels)},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To(w.ClassName(op.Class))},
	}
	if op.NoClass {
		l.Spec.ClassName = nil
	}
	for i, p := range op.Ports {
		l.Spec.Ports = append(l.Spec.Ports, v1alpha1.ListenerPort{Name: fmt.Sprintf("p%d", i), Port: p, Protocol: corev1.ProtocolTCP})
	}
	if len(op.Overrides) > 0 {
		raw, err := override(names.ServiceName(op.Name), w.shareOverrides(op))
		if err != nil {
			return nil, err
		}
		l.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: raw}}
	}
	return l, nil
}

// override is the objectOverrides entry for a Service named svc that sets
// entries ("annotations:k=v", "labels:k=v", "spec:field=value").
func override(svc string, entries []string) ([]byte, error) {
	meta := map[string]any{"name": svc}
	spec := map[string]any{}
	for _, e := range entries {
		where, kv, _ := strings.Cut(e, ":")
		k, v, _ := strings.Cut(kv, "=")
		switch where {
		case "annotations", "labels":
			m, _ := meta[where].(map[string]any)
			if m == nil {
				m = map[string]any{}
				meta[where] = m
			}
			m[k] = v
		case "spec":
			spec[k] = v
		default:
			return nil, fmt.Errorf("override entry %q: want annotations:, labels: or spec:", e)
		}
	}
	o := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta}
	if len(spec) > 0 {
		o["spec"] = spec
	}
	return json.Marshal(o)
}

// Claim is the listener claim a PutClaim makes.
func (w World) Claim(op Op) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: op.Name, Namespace: w.Tenants[op.Tenant], Labels: pairs(op.Labels),
			Annotations: map[string]string{v1alpha1.AnnotationListenerClass: w.ClassName(op.Class)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
}

// pairs turns "key=value" entries into a map (nil for none).
func pairs(kvs []string) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
