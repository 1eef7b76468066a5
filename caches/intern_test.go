package caches

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestRepeatedStringsAreHeldOnce: two objects decoded apart hold the same
// namespace, label key and owner kind in one copy after their transforms,
// and nothing they say changes.
func TestRepeatedStringsAreHeldOnce(t *testing.T) {
	mk := func(name string) *v1alpha1.Listener {
		// Fresh copies of every string, as a decoder makes them.
		s := func(v string) string { return string([]byte(v)) }
		return &v1alpha1.Listener{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s("team-a"),
				Labels:          map[string]string{s("app.kubernetes.io/name"): s("kafka"), s("flag"): s("true")},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: s("v1"), Kind: s("PersistentVolumeClaim"), Name: name}}},
			Status: v1alpha1.ListenerStatus{Conditions: []metav1.Condition{{Type: s("Ready"), Status: metav1.ConditionStatus(s("True")), Reason: s("Ready"), Message: "m"}}},
		}
	}
	one, two := mk("a"), mk("b")
	for _, o := range []*v1alpha1.Listener{one, two} {
		if _, err := Compact(o); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what, x, y string) {
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("namespace", one.Namespace, two.Namespace)
	same("owner kind", one.OwnerReferences[0].Kind, two.OwnerReferences[0].Kind)
	same("condition type", one.Status.Conditions[0].Type, two.Status.Conditions[0].Type)
	same("common label value", one.Labels["flag"], two.Labels["flag"])
	for k := range one.Labels {
		for k2 := range two.Labels {
			if k == k2 {
				same("label key", k, k2)
			}
		}
	}
	if one.Labels["app.kubernetes.io/name"] != "kafka" || one.Namespace != "team-a" || one.Name != "a" || two.Name != "b" {
		t.Errorf("a transform changed what an object says: %+v", one.ObjectMeta)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}}}
	out, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	again, err := TrimPod(out)
	if err != nil || again.(*corev1.Pod).Spec.NodeName != "node-1" || again.(*corev1.Pod).Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "c" {
		t.Errorf("trimming a trimmed pod again: %+v, %v", again, err)
	}
}

// TestValuesHeldInTheName: a value that begins the object's own name (or
// its claim's) is held in the name's memory, and reads the same: a
// listener volume's handle and Listener, a
// Service's Listener and instance label, a pod's StatefulSet and pod-name
// label. A value that differs keeps its own
// copy.
func TestValuesHeldInTheName(t *testing.T) {
	s := func(v string) string { return string([]byte(v)) } // a decoder's copy
	inName := func(what, v, name string) {
		t.Helper()
		n := unsafe.StringData(name)
		p := unsafe.StringData(v)
		if uintptr(unsafe.Pointer(p)) < uintptr(unsafe.Pointer(n)) || uintptr(unsafe.Pointer(p))+uintptr(len(v)) > uintptr(unsafe.Pointer(n))+uintptr(len(name)) {
			t.Errorf("%s %q is a copy of its own, not held in the name %q", what, v, name)
		}
	}
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"volume handle is the name", func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: s("pvc-1c9f")},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: s("pvc-1c9f")}}}}
			out, _ := TrimVolume(pv)
			got := out.(*corev1.PersistentVolume)
			if got.Spec.CSI.VolumeHandle != "pvc-1c9f" {
				t.Fatalf("handle %q", got.Spec.CSI.VolumeHandle)
			}
			inName("volume handle", got.Spec.CSI.VolumeHandle, got.Name)
		}},
		{"volume handle that is not the name", func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: s("pv-a")},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: s("vol-b")}}}}
			out, _ := TrimVolume(pv)
			if h := out.(*corev1.PersistentVolume).Spec.CSI.VolumeHandle; h != "vol-b" {
				t.Fatalf("handle %q, want vol-b", h)
			}
		}},
		{"volume's Listener is its claim's name", func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: s("pvc-1c9f"), Labels: map[string]string{v1alpha1.LabelVolumeListener: s("kafka-0")}},
				Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: s("kafka-0")},
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: s("pvc-1c9f")}}}}
			out, _ := TrimVolume(pv)
			got := out.(*corev1.PersistentVolume)
			if got.Labels[v1alpha1.LabelVolumeListener] != "kafka-0" {
				t.Fatalf("labels %v", got.Labels)
			}
			inName("volume's Listener", got.Labels[v1alpha1.LabelVolumeListener], got.Spec.ClaimRef.Name)
		}},
		{"Service's Listener and instance", func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s("kafka-0"), Labels: map[string]string{"app.kubernetes.io/instance": s("kafka-0"), "app.kubernetes.io/part-of": s("other")},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: s(v1alpha1.GroupVersion.String()), Kind: s("Listener"), Name: s("kafka-0"), UID: "l1"}}}}
			out, _ := TrimService(svc)
			got := out.(*corev1.Service)
			if got.Labels["app.kubernetes.io/instance"] != "kafka-0" || got.Labels["app.kubernetes.io/part-of"] != "other" || got.OwnerReferences[0].Name != "kafka-0" {
				t.Fatalf("metadata %+v", got.ObjectMeta)
			}
			inName("instance label", got.Labels["app.kubernetes.io/instance"], got.Name)
			inName("owner name", got.OwnerReferences[0].Name, got.Name)
		}},
		{"pod's StatefulSet", func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s("kafka-0"), Labels: map[string]string{"statefulset.kubernetes.io/pod-name": s("kafka-0")},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: s("kafka"), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}}}
			out, _ := TrimPod(pod) // Pending: its controller is kept
			got := out.(*corev1.Pod)
			if got.OwnerReferences[0].Name != "kafka" || got.Labels["statefulset.kubernetes.io/pod-name"] != "kafka-0" {
				t.Fatalf("metadata %+v", got.ObjectMeta)
			}
			inName("controller's name", got.OwnerReferences[0].Name, got.Name)
			inName("pod-name label", got.Labels["statefulset.kubernetes.io/pod-name"], got.Name)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestRepeatingMapsAreHeldOnce: objects whose labels or annotations say the
// same hold one map after their transforms; a map that names its object,
// or says something else, is its own; and what each object says is
// unchanged.
func TestRepeatingMapsAreHeldOnce(t *testing.T) {
	claim := func(name string, labels map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: labels,
				Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external", "kubectl.kubernetes.io/last-applied-configuration": name}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName), VolumeName: "pv-" + name},
		}
	}
	in := newInterner() // one cache's
	trim := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		t.Helper()
		out, err := in.trimClaim(c)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.PersistentVolumeClaim)
	}
	ptrOf := func(m map[string]string) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
	workload := func() map[string]string {
		return map[string]string{"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "kafka", v1alpha1.LabelListenerVolume: "true"}
	}
	a, b := trim(claim("kafka-0-listener", workload())), trim(claim("kafka-1-listener", workload()))
	if ptrOf(a.Labels) != ptrOf(b.Labels) {
		t.Errorf("two claims of one workload hold two copies of the same labels %v", a.Labels)
	}
	if ptrOf(a.Annotations) != ptrOf(b.Annotations) {
		t.Errorf("two claims of one class hold two copies of the same annotations %v", a.Annotations)
	}
	if !maps.Equal(a.Labels, workload()) || !maps.Equal(a.Annotations, map[string]string{v1alpha1.AnnotationListenerClass: "external"}) {
		t.Errorf("a transform changed what a claim says: labels %v, annotations %v", a.Labels, a.Annotations)
	}

	other := workload()
	other["app.kubernetes.io/instance"] = "kafka-two"
	if c := trim(claim("kafka-two-0-listener", other)); ptrOf(c.Labels) == ptrOf(a.Labels) || c.Labels["app.kubernetes.io/instance"] != "kafka-two" {
		t.Errorf("a claim of another workload got labels %v", c.Labels)
	}
	if c := trim(claim("solo", map[string]string{"app": "solo"})); c.Labels["app"] != "solo" || c.Labels[v1alpha1.LabelListenerVolume] != "" {
		t.Errorf("a claim of its own got labels %v", c.Labels)
	}
}

// TestMapTable: the table tells maps apart by content whatever bytes their
// strings hold, stays bounded however many different maps pass, and keeps
// a map that keeps repeating while others pass.
func TestMapTable(t *testing.T) {
	ptrOf := func(m map[string]string) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
	var tab mapTable[string]
	for _, pair := range [][2]map[string]string{
		{{"a": "bc"}, {"ab": "c"}},
		{{"a": "b\x00c"}, {"a": "b", "\x00c": ""}},
		// The same bytes if strings were only separated by NUL.
		{{"a": "x\x00b\x00y"}, {"a": "x", "b": "y"}},
		{{"a": ""}, {"a": "", "": ""}},
		{{"k": "1", "l": "2"}, {"k": "2", "l": "1"}},
	} {
		x, y := tab.get(pair[0]), tab.get(pair[1])
		if ptrOf(x) == ptrOf(y) || !maps.Equal(x, pair[0]) || !maps.Equal(y, pair[1]) {
			t.Errorf("%q and %q: the table gave %q and %q", pair[0], pair[1], x, y)
		}
	}
	popular := tab.get(map[string]string{"app": "kafka"})
	for i := range 10 * mapTableGeneration {
		tab.get(map[string]string{"pod": fmt.Sprint(i)})
		if i%(mapTableGeneration/2) == 0 {
			if got := tab.get(map[string]string{"app": "kafka"}); ptrOf(got) != ptrOf(popular) {
				t.Fatalf("after %d other maps, a map that keeps repeating got a second copy", i)
			}
		}
	}
	if n := len(tab.cur) + len(tab.old); n > 2*mapTableGeneration {
		t.Errorf("the table holds %d maps, more than two generations of %d", n, mapTableGeneration)
	}
	big := map[string]string{}
	for i := range maxSharedMap + 1 {
		big[fmt.Sprint(i)] = "v"
	}
	if ptrOf(tab.get(big)) != ptrOf(big) || ptrOf(tab.get(maps.Clone(big))) == ptrOf(big) {
		t.Errorf("a map of %d entries is held by the table", len(big))
	}
	long := map[string]string{"note": strings.Repeat("x", 256<<10)}
	if ptrOf(tab.get(long)) != ptrOf(long) || ptrOf(tab.get(maps.Clone(long))) == ptrOf(long) {
		t.Errorf("a map of a 256 KiB annotation is held by the table")
	}
	for k := range tab.cur {
		if len(k) > 2*maxSharedBytes {
			t.Errorf("the table keeps a key of %d bytes", len(k))
		}
	}
}

// TestListenerStatusPortsAreHeldOnce: the port maps of Listeners' statuses
// that say the same are one map after the transform (a ClusterIP
// workload's addresses, a NodePort Listener's node ports and the ports of
// each of its addresses), the node addresses one string, and every
// Listener's status reads as it was written.
func TestListenerStatusPortsAreHeldOnce(t *testing.T) {
	s := func(v string) string { return string([]byte(v)) } // a decoder's copy
	clusterIP := func(name string) *v1alpha1.Listener {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Status: v1alpha1.ListenerStatus{ServiceName: s(name), ServiceType: "ClusterIP", IngressAddresses: []v1alpha1.ListenerIngress{
				{Address: name + ".team-a.svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{s("http"): 8080}}}}}
	}
	nodePort := func(name string, port int32) *v1alpha1.Listener {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Status: v1alpha1.ListenerStatus{ServiceName: s(name), ServiceType: "NodePort", NodePorts: map[string]int32{s("http"): port}, IngressAddresses: []v1alpha1.ListenerIngress{
				{Address: s("10.0.0.1"), AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{s("http"): port}},
				{Address: s("10.0.0.2"), AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{s("http"): port}}}}}
	}
	in := newInterner() // one cache's
	compact := func(l *v1alpha1.Listener) (*v1alpha1.Listener, *v1alpha1.Listener) {
		t.Helper()
		want := l.DeepCopy()
		if _, err := in.compact(l); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(l.Status, want.Status) {
			t.Fatalf("the transform changed what %s's status says:\n%+v\nwant\n%+v", l.Name, l.Status, want.Status)
		}
		return l, want
	}
	ptrOf := func(m map[string]int32) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

	a, _ := compact(clusterIP("kafka-0"))
	b, _ := compact(clusterIP("kafka-1"))
	if ptrOf(a.Status.IngressAddresses[0].Ports) != ptrOf(b.Status.IngressAddresses[0].Ports) {
		t.Error("two ClusterIP Listeners of one workload hold two copies of the same ports")
	}
	if unsafe.StringData(a.Status.ServiceName) != unsafe.StringData(a.Name) {
		t.Error("a Listener's Service name, its own name, is a copy of its own")
	}
	n, _ := compact(nodePort("kafka-np-0", 31080))
	m, _ := compact(nodePort("kafka-np-1", 31081))
	if p := ptrOf(n.Status.NodePorts); ptrOf(n.Status.IngressAddresses[0].Ports) != p || ptrOf(n.Status.IngressAddresses[1].Ports) != p {
		t.Error("a NodePort Listener holds its node ports in more than one map")
	}
	if ptrOf(m.Status.NodePorts) == ptrOf(n.Status.NodePorts) || m.Status.NodePorts["http"] != 31081 {
		t.Errorf("two Listeners with other node ports share a map: %v", m.Status.NodePorts)
	}
	if x, y := n.Status.IngressAddresses[0].Address, m.Status.IngressAddresses[0].Address; unsafe.StringData(x) != unsafe.StringData(y) {
		t.Errorf("node address %q is held twice", x)
	}
	if ptrOf(a.Status.IngressAddresses[0].Ports) == ptrOf(n.Status.NodePorts) {
		t.Error("ports 8080 and node ports 31080 share a map")
	}
}
