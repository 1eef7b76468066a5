package caches

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Strings that repeat across cached objects are held once.
//
// Every object the informers decode brings its own copy of every string:
// the namespace, each label and annotation key, the owner's API version
// and kind, a condition's type and reason. Across thousands of objects the
// copies add up to a few hundred bytes per object. The transforms replace
// them with one canonical copy (package unique): keys and the other
// strings drawn from a small set. Values that are mostly distinct (names,
// UIDs, most label values) are left alone, since a canonical copy costs
// more than a string used once; only the operator's own label values,
// which are few, are canonical.

// intern is the canonical copy of s.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// commonValues are label values that thousands of objects share.
var commonValues = map[string]string{
	"true":                         "true",
	"false":                        "false",
	v1alpha1.LabelServiceKindValue: v1alpha1.LabelServiceKindValue,
	v1alpha1.FieldManager:          v1alpha1.FieldManager,
}

// interner is what one cache shares among the objects it holds: the maps
// that repeat. Each cache has its own (the policies make one each), none
// is reachable from outside the package, and nothing outside it reaches a
// cached object either (readonly.go). A nil interner shares no map
// (strings are still canonical: they cannot be written to).
type interner struct {
	// maps holds one copy of each small label or annotation map that
	// repeats across cached objects (a Go map costs some 300 bytes even
	// with one entry, and a listener claim brings ten or so).
	maps mapTable[string]
	// ports holds one copy of each small port map of a Listener's status
	// that repeats: the ports of a ClusterIP Listener's address are those
	// of every Listener of its workload, and a NodePort Listener's node
	// ports are the same in status.nodePorts and in each of its addresses.
	ports mapTable[int32]
}

func newInterner() *interner { return &interner{} }

// labels returns m with canonical keys (and common values), as the
// one map held of maps with its content (in.maps: the labels a
// workload's claims, Listeners and Services have in common, a class's
// annotation); nil stays nil. A value that begins one of names (the
// object's own: its StatefulSet pod name, its instance) is held in that
// name's memory (in a shared map: in the name of the first object that had
// it). Nothing may write to the result: many objects may hold it.
func (in *interner) labels(m map[string]string, names ...string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if c, ok := commonValues[v]; ok {
			v = c
		} else {
			v = inName(v, names...)
		}
		out[intern(k)] = v
	}
	if in == nil {
		return out
	}
	return in.maps.get(out)
}

// mapTable is a bounded table of maps by content: two generations of at
// most mapTableGeneration entries each, the older dropped when the newer is
// full, an entry found in the older moved to the newer. A map that repeats
// stays; maps that never repeat pass through and are forgotten. Dropping an
// entry costs nothing but sharing: the objects that hold it keep it.
type mapTable[V string | int32] struct {
	mu       sync.Mutex
	cur, old map[string]map[string]V
	key      []byte
	keys     []string
}

// mapTableGeneration bounds what the table keeps alive beyond the cached
// objects: at most 512 keys and the maps of objects gone since, some
// 200 KB. A map that repeats is asked for far more often than once in 256
// others.
const mapTableGeneration = 256

// maxSharedMap and maxSharedBytes bound the maps the table holds, by
// entries and by the bytes of their keys and values: larger ones rarely
// repeat, and what a tenant writes in a Listener's annotations (up to
// 256 KiB) must not become a key the table keeps.
const (
	maxSharedMap   = 8
	maxSharedBytes = 512
)

// get returns the table's map with m's content, holding m if there is none.
func (t *mapTable[V]) get(m map[string]V) map[string]V {
	if len(m) == 0 || len(m) > maxSharedMap {
		return m
	}
	size := 0
	for k, v := range m {
		size += len(k) + valueSize(v)
	}
	if size > maxSharedBytes {
		return m
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.key = t.encode(t.key[:0], m)
	if c, ok := t.cur[string(t.key)]; ok {
		return c
	}
	if c, ok := t.old[string(t.key)]; ok {
		m = c
	}
	if len(t.cur) >= mapTableGeneration {
		t.old, t.cur = t.cur, nil
	}
	if t.cur == nil {
		t.cur = make(map[string]map[string]V, mapTableGeneration)
	}
	t.cur[string(t.key)] = m
	return m
}

// encode appends m's key in the table to b: its entries in key order, each
// string after its length (an annotation's value may hold any byte, and two
// different maps must never have one key). Called with t.mu held.
func (t *mapTable[V]) encode(b []byte, m map[string]V) []byte {
	t.keys = t.keys[:0]
	for k := range m {
		t.keys = append(t.keys, k)
	}
	slices.Sort(t.keys)
	for _, k := range t.keys {
		b = appendValue(append(binary.AppendUvarint(b, uint64(len(k))), k...), m[k])
	}
	return b
}

// valueSize is the bytes of a map value that count against maxSharedBytes.
func valueSize[V string | int32](v V) int {
	if s, ok := any(v).(string); ok {
		return len(s)
	}
	return 4
}

// appendValue appends v to a table key: a number as a varint, a string
// after its length (a table holds one type of value).
func appendValue[V string | int32](b []byte, v V) []byte {
	if n, ok := any(v).(int32); ok {
		return binary.AppendVarint(b, int64(n))
	}
	str, _ := any(v).(string)
	return append(binary.AppendUvarint(b, uint64(len(str))), str...)
}

// inName is v held in the memory of the first of names that begins with
// it (the copy a decoder made of v is then garbage): a volume's handle is
// its name, a slice's name begins with its Service's, a claim's Listener
// has the claim's name. Otherwise v.
func inName(v string, names ...string) string {
	for _, name := range names {
		if v != "" && strings.HasPrefix(name, v) {
			return name[:len(v)]
		}
	}
	return v
}

// meta makes the repeated strings of an object's metadata canonical:
// the namespace, the generate-name prefix, the label and annotation keys
// (and common values), the owners' API versions and kinds; label and
// annotation values and owners' names that begin the object's name are
// held in the name (inName); label and annotation values that begin one of
// also (a volume's claim) are held there. It takes the
// accessors, so that a typed object's ObjectMeta and any client.Object
// (a metadata-only one among them) go the same way.
func (in *interner) meta(m metav1.Object, also ...string) {
	name := m.GetName()
	names := append([]string{name}, also...)
	m.SetNamespace(intern(m.GetNamespace()))
	m.SetGenerateName(intern(m.GetGenerateName()))
	m.SetLabels(in.labels(m.GetLabels(), names...))
	m.SetAnnotations(in.labels(m.GetAnnotations(), names...))
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
		// A per-claim Listener's claim, a Service's Listener.
		refs[i].Name = inName(refs[i].Name, name)
	}
}

// internConditions makes the types, statuses and reasons of conditions
// canonical.
func internConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Status, c.Reason = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status))), intern(c.Reason)
	}
}

// Compact is the transform of every type without one of its own: it drops
// managedFields (StripManagedFields) and makes the repeated strings of the
// metadata canonical; of a Listener, also its conditions' and addresses'.
// It shares no map among objects: the policies' caches do, each among its
// own objects (interner).
func Compact(obj any) (any, error) { return (*interner)(nil).compact(obj) }

func (in *interner) compact(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	in.meta(o)
	if l, ok := o.(*v1alpha1.Listener); ok {
		internConditions(l.Status.Conditions)
		l.Status.ClassName = intern(l.Status.ClassName)
		l.Status.ServiceType = v1alpha1.ServiceType(intern(string(l.Status.ServiceType)))
		internPtr(l.Spec.ClassName)
		// A Listener's Service usually has the Listener's name.
		l.Status.ServiceName = inName(l.Status.ServiceName, l.Name)
		l.Status.NodePorts = in.portMap(l.Status.NodePorts)
		for i := range l.Status.IngressAddresses {
			a := &l.Status.IngressAddresses[i]
			a.AddressType = v1alpha1.AddressType(intern(string(a.AddressType)))
			if a.AddressType == v1alpha1.AddressTypeIP {
				// Node addresses, shared by every NodePort Listener
				// with a pod on the node; a hostname names its Listener.
				a.Address = intern(a.Address)
			}
			a.Ports = in.portMap(a.Ports)
		}
	}
	return obj, nil
}

// portMap is a port map of a Listener's status with canonical names, as
// the one map held of maps with its content (in.ports); nil stays nil.
// Nothing may write to the result: many objects may hold it.
func (in *interner) portMap(m map[string]int32) map[string]int32 {
	if m == nil {
		return nil
	}
	out := make(map[string]int32, len(m))
	for k, v := range m {
		out[intern(k)] = v
	}
	if in == nil {
		return out
	}
	return in.ports.get(out)
}

// internPtr makes the string p points to canonical; nil stays nil.
func internPtr[S ~string](p *S) {
	if p != nil {
		*p = S(intern(string(*p)))
	}
}

// internString makes the string s points to canonical.
func internString[S ~string](s *S) { *s = S(intern(string(*s))) }

// volume makes the repeated strings of a listener volume canonical:
// its metadata (its Listener's label held in its claim's name: a per-claim
// Listener has the claim's name), storage class, driver, claim reference's
// kind, version and namespace, the keys, operators and node names of its
// node affinity.
func (in *interner) volume(pv *corev1.PersistentVolume) {
	var claim []string
	if r := pv.Spec.ClaimRef; r != nil {
		claim = []string{r.Name}
	}
	in.meta(&pv.ObjectMeta, claim...)
	internString(&pv.Spec.StorageClassName)
	internString(&pv.Status.Phase)
	if pv.Spec.CSI != nil {
		internString(&pv.Spec.CSI.Driver)
	}
	if r := pv.Spec.ClaimRef; r != nil {
		r.Kind, r.APIVersion, r.Namespace = intern(r.Kind), intern(r.APIVersion), intern(r.Namespace)
	}
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		internNodeSelector(a.Required)
	}
}

// internNodeSelector makes the keys, operators and values of a node
// selector canonical (values are node names and zones, which repeat).
func internNodeSelector(ns *corev1.NodeSelector) {
	for i := range ns.NodeSelectorTerms {
		t := &ns.NodeSelectorTerms[i]
		for _, reqs := range [][]corev1.NodeSelectorRequirement{t.MatchExpressions, t.MatchFields} {
			for j := range reqs {
				r := &reqs[j]
				internString(&r.Key)
				internString(&r.Operator)
				for k := range r.Values {
					r.Values[k] = intern(r.Values[k])
				}
			}
		}
	}
}

// service makes the repeated strings of a Service canonical: its
// metadata, selector keys, type and policies, port names and protocols,
// IP families.
func (in *interner) service(s *corev1.Service) {
	in.meta(&s.ObjectMeta)
	s.Spec.Selector = in.labels(s.Spec.Selector, "")
	internString(&s.Spec.Type)
	internString(&s.Spec.SessionAffinity)
	internString(&s.Spec.ExternalTrafficPolicy)
	internPtr(s.Spec.InternalTrafficPolicy)
	internPtr(s.Spec.IPFamilyPolicy)
	for i := range s.Spec.IPFamilies {
		internString(&s.Spec.IPFamilies[i])
	}
	for i := range s.Spec.Ports {
		internString(&s.Spec.Ports[i].Name)
		internString(&s.Spec.Ports[i].Protocol)
	}
}
