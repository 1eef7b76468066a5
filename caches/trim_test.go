package caches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pinned is the required node affinity the pod webhook writes for a pinned
// listener volume.
var pinned = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
	{Key: "listeners.stackable.tech/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}},
}}}}

func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{"app": "web", "listener.stackable.tech/mnt.x": "true", "listeners.stackable.tech/listener-volume": "true",
				"statefulset.kubernetes.io/pod-name": "web-0", "controller-revision-hash": "web-5d8f7c9b6"},
			Annotations:     map[string]string{"prometheus.io/scrape": "true", annotationLastApplied: "{...}", "listeners.stackable.tech/mount-init-containers": "init"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Finalizers:      []string{"example.com/keep"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Node", Name: "n1"}, {Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1",
			Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pinned, PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}},
			},
			Volumes: []corev1.Volume{
				{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "listener-web-0"}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"listeners.stackable.tech/listener-class": "external"}},
				}}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "big"}}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "B"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}},
				{Name: "no-ports", Image: "i"},
				{Name: "side", Image: "i", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 7070}}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "i", Ports: []corev1.ContainerPort{{ContainerPort: 1}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
				{Type: corev1.PodReady, Status: corev1.ConditionStatus(string([]byte("True"))), LastTransitionTime: metav1.Now(), Reason: "r", Message: "m"},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
		},
	}
}

// TestTrimPod: what the reconcilers read survives, everything else is gone;
// the controller and the node affinity, which pinned-node loss reads of a
// Pending pod only, are kept until the pod is bound to a node.
func TestTrimPod(t *testing.T) {
	keptMeta := metav1.ObjectMeta{
		Name: "web-0", Namespace: "ns", UID: "u1", ResourceVersion: "7",
		// The labels and annotations read, no finalizers.
		Labels: map[string]string{"listener.stackable.tech/mnt.x": "true", "listeners.stackable.tech/listener-volume": "true",
			"statefulset.kubernetes.io/pod-name": "web-0"},
		Annotations: map[string]string{"listeners.stackable.tech/mount-init-containers": "init"},
	}
	keptSpec := corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "listener-web-0"}}},
			{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		},
		// A per-claim Listener's ports come from these: every
		// container's, in order, in one container.
		Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090, Protocol: corev1.ProtocolUDP}, {Name: "metrics", ContainerPort: 7070}}}},
	}
	controller := []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}}
	required := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pinned}}

	tests := []struct {
		name         string
		node         string
		owners       []metav1.OwnerReference
		wantAffinity *corev1.Affinity
	}{
		// Bound to a node: nothing reads its controller or affinity.
		{name: "running", node: "n1"},
		// Pending: pinned-node loss may delete it for its controller to
		// recreate, when the node it requires is gone.
		{name: "pending", node: "", owners: controller, wantAffinity: required},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := fullPod()
			pod.Spec.NodeName = tt.node
			got, err := TrimPod(pod)
			if err != nil {
				t.Fatal(err)
			}
			// Of the conditions only Ready, its status alone (a NodePort
			// Listener that publishes only ready pods' nodes reads it).
			want := &corev1.Pod{ObjectMeta: *keptMeta.DeepCopy(), Spec: *keptSpec.DeepCopy(), Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
			want.OwnerReferences = tt.owners
			want.Spec.NodeName = tt.node
			want.Spec.Affinity = tt.wantAffinity
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("trimmed pod:\n got %+v\nwant %+v", got, want)
			}
			again, _ := TrimPod(got)
			if !equality.Semantic.DeepEqual(again, want) {
				t.Fatalf("trimming twice changed the pod: %+v", again)
			}
		})
	}
}

// TestTransformsPassOtherObjects: an informer may hand a tombstone or
// another type; it passes unchanged.
func TestTransformsPassOtherObjects(t *testing.T) {
	for name, fn := range map[string]func(any) (any, error){"TrimPod": TrimPod, "TrimNode": TrimNode, "TrimService": TrimService, "TrimClaim": TrimClaim, "TrimVolume": TrimVolume, "StripManagedFields": StripManagedFields} {
		other := "not an object"
		got, err := fn(other)
		if err != nil || got != other {
			t.Errorf("%s(%q) = %v, %v; want it unchanged", name, other, got, err)
		}
	}
}

// TestTrimsReuseTheDecodedObject: the transforms of the kinds a listener
// claim brings trim the object the informer decoded in place rather than
// copy what they keep into a new one. A copy leaves the decoded object as
// garbage next to the kept one, in spans of the same size class, which
// after a collection stay in use with room the cache never fills
// (BenchmarkListenerObjects' leader-inuse-B/obj; docs/benchmarks.md).
func TestTrimsReuseTheDecodedObject(t *testing.T) {
	claimClass := ptr.To(v1alpha1.StorageClassName)
	for name, tc := range map[string]struct {
		fn  func(any) (any, error)
		obj any
	}{
		"TrimPod":               {TrimPod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}},
		"TrimClaim (listener)":  {TrimClaim, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: claimClass}}},
		"TrimClaim (ordinary)":  {TrimClaim, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
		"TrimVolume (listener)": {TrimVolume, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName}}}}},
		"TrimVolume (other)":    {TrimVolume, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v"}}},
		"TrimService":           {TrimService, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}}},
	} {
		got, err := tc.fn(tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != tc.obj {
			t.Errorf("%s returned a new object, not the one it was given", name)
		}
	}
}

func TestTrimNodeAndStripManagedFields(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", v1alpha1.AnnotationNodeAddress: "203.0.113.9"}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:    []corev1.ContainerImage{{Names: []string{"big"}}},
		},
	}
	got, _ := TrimNode(n)
	gn := got.(*corev1.Node)
	if gn.ManagedFields != nil || gn.Status.Images != nil || len(gn.Status.Addresses) != 1 {
		t.Fatalf("trimmed node: %+v", gn)
	}
	// The node address annotation (nodeAddress: Annotation) is read; the
	// others are not.
	if len(gn.Annotations) != 1 || gn.Annotations[v1alpha1.AnnotationNodeAddress] != "203.0.113.9" {
		t.Fatalf("trimmed node annotations: %v, want only %s", gn.Annotations, v1alpha1.AnnotationNodeAddress)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	got, _ = StripManagedFields(pvc)
	if g := got.(*corev1.PersistentVolumeClaim); g.ManagedFields != nil || g.Annotations["a"] != "b" {
		t.Fatalf("stripped claim: %+v", g)
	}
}

// TestTrimPodWithoutClaims: a pod with no claim-backed volume keeps no
// volumes and no containers: nothing reads them.
func TestTrimPodWithoutClaims(t *testing.T) {
	pod := fullPod()
	pod.Spec.Volumes = pod.Spec.Volumes[2:]
	got, _ := TrimPod(pod)
	gp := got.(*corev1.Pod)
	if gp.Spec.Volumes != nil || gp.Spec.Containers != nil || gp.Spec.NodeName != "n1" {
		t.Fatalf("trimmed pod without claims: volumes %v, containers %v, node %q", gp.Spec.Volumes, gp.Spec.Containers, gp.Spec.NodeName)
	}
}

// TestTrimService: of a Service's managedFields the cache keeps only, and
// exactly as long as the listener reconciler still has fields to hand over
// to server-side apply, the entries without their field sets; the cached
// Service and the API server's answer HandoverPending alike (the reconciler
// asks the cached one, then hands over from the API server's).
func TestTrimService(t *testing.T) {
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:type":{}}}`)}
	entry := func(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: fields, Time: &metav1.Time{}}
	}
	cases := []struct {
		name     string
		entries  []metav1.ManagedFieldsEntry
		wantKept bool
	}{
		{"created by the operator, not applied yet", []metav1.ManagedFieldsEntry{entry(v1alpha1.FieldManager, metav1.ManagedFieldsOperationUpdate)}, true},
		{"created, then edited by kubectl", []metav1.ManagedFieldsEntry{entry(v1alpha1.FieldManager, metav1.ManagedFieldsOperationUpdate), entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate)}, true},
		{"applied by the operator", []metav1.ManagedFieldsEntry{entry(v1alpha1.FieldManager, metav1.ManagedFieldsOperationApply)}, false},
		{"applied, and a foreign manager updated it", []metav1.ManagedFieldsEntry{entry(v1alpha1.FieldManager, metav1.ManagedFieldsOperationApply), entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate)}, false},
		{"a foreign Service", []metav1.ManagedFieldsEntry{entry("helm", metav1.ManagedFieldsOperationUpdate)}, false},
		{"no managedFields", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "3", Labels: map[string]string{"a": "b"}, ManagedFields: tc.entries}}
			got, err := TrimService(svc.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			gs := got.(*corev1.Service)
			if kept := gs.ManagedFields != nil; kept != tc.wantKept {
				t.Fatalf("managedFields kept = %v, want %v", kept, tc.wantKept)
			}
			for _, f := range gs.ManagedFields {
				if f.FieldsV1 != nil || f.Time != nil || f.APIVersion != "" {
					t.Errorf("cached entry %+v holds more than its manager and operation", f)
				}
			}
			if gs.Labels["a"] != "b" {
				t.Fatalf("labels lost: %v", gs.Labels)
			}
			if cached, server := HandoverPending(gs), HandoverPending(svc); cached != server || server != tc.wantKept {
				t.Fatalf("HandoverPending: cached Service %v, API server's %v, want %v", cached, server, tc.wantKept)
			}
		})
	}
}

// TestTrimClaimAndVolume: what the webhooks and the reconcilers read of a
// listener claim and its volume survives (the listener annotations, the
// class, the binding, the pinned node, the driver; while the claim is
// unbound, what its volume is made from); a bound claim's size and access
// modes, volume attributes, finalizers, a claim's owners and other
// annotations are gone.
func TestTrimClaimAndVolume(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "listener-web-0", Namespace: "ns", UID: "c1", ResourceVersion: "9",
		Annotations:     map[string]string{"listeners.stackable.tech/listener-class": "external", "volume.kubernetes.io/selected-node": "n1"},
		Finalizers:      []string{"kubernetes.io/pvc-protection"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "web-0", UID: "p1"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}}
	class := ptr.To("listeners.stackable.tech")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class, VolumeName: "pvc-c1",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
	}
	got, err := TrimClaim(pvc.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmedMeta := *meta.DeepCopy()
	trimmedMeta.ManagedFields = nil
	trimmedMeta.Finalizers = nil
	trimmedMeta.OwnerReferences = nil
	trimmedMeta.Annotations = map[string]string{"listeners.stackable.tech/listener-class": "external"} // the operator's only
	wantClaim := &corev1.PersistentVolumeClaim{ObjectMeta: trimmedMeta,
		Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: class, VolumeName: "pvc-c1"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	if !equality.Semantic.DeepEqual(got, wantClaim) {
		t.Fatalf("trimmed claim:\n got %+v\nwant %+v", got, wantClaim)
	}

	// Unbound, it keeps what the provisioner makes its volume from (the
	// scheduler's node, access modes, volume mode, the requested size),
	// and drops the rest.
	unbound := pvc.DeepCopy()
	unbound.Spec.VolumeName = ""
	unbound.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	unbound.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2")}
	unbound.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	unbound.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	gotUnbound, err := TrimClaim(unbound)
	if err != nil {
		t.Fatal(err)
	}
	unboundMeta := *trimmedMeta.DeepCopy()
	unboundMeta.Annotations["volume.kubernetes.io/selected-node"] = "n1"
	wantUnbound := &corev1.PersistentVolumeClaim{ObjectMeta: unboundMeta,
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	if !equality.Semantic.DeepEqual(gotUnbound, wantUnbound) {
		t.Fatalf("trimmed unbound claim:\n got %+v\nwant %+v", gotUnbound, wantUnbound)
	}
	if again, _ := TrimClaim(wantUnbound.DeepCopy()); !equality.Semantic.DeepEqual(again, wantUnbound) {
		t.Fatalf("trimming an unbound claim twice changed it: %+v", again)
	}

	pvMeta := metav1.ObjectMeta{Name: "pvc-c1", UID: "v1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "listeners.stackable.tech"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "csi-provisioner"}}}
	claimRef := &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "listener-web-0", UID: "c1"}
	affinity := &corev1.VolumeNodeAffinity{Required: pinned}
	pv := &corev1.PersistentVolume{ObjectMeta: pvMeta,
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: claimRef, NodeAffinity: affinity, StorageClassName: *class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "listeners.stackable.tech", VolumeHandle: "pvc-c1", VolumeAttributes: map[string]string{"listeners.stackable.tech/listener": "web"}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	got, err = TrimVolume(pv)
	if err != nil {
		t.Fatal(err)
	}
	pvMeta.ManagedFields = nil
	pvMeta.Annotations = nil
	wantPV := &corev1.PersistentVolume{ObjectMeta: pvMeta,
		Spec: corev1.PersistentVolumeSpec{ClaimRef: claimRef, NodeAffinity: affinity, StorageClassName: *class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "listeners.stackable.tech", VolumeHandle: "pvc-c1"}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	if !equality.Semantic.DeepEqual(got, wantPV) {
		t.Fatalf("trimmed volume:\n got %+v\nwant %+v", got, wantPV)
	}
	againClaim, _ := TrimClaim(wantClaim.DeepCopy())
	againPV, _ := TrimVolume(wantPV.DeepCopy())
	if !equality.Semantic.DeepEqual(againClaim, wantClaim) || !equality.Semantic.DeepEqual(againPV, wantPV) {
		t.Fatalf("trimming twice changed them: %+v, %+v", againClaim, againPV)
	}
	if n := addresses.PinnedNode(got.(*corev1.PersistentVolume)); n != "n1" {
		t.Fatalf("the trimmed volume is pinned to %q, want n1", n)
	}
}

// TestTrimUnrelated: a claim that is not a listener claim, a volume of
// another driver and a node keep only what is read of them: the claim and
// the volume their identity (and the claim its class, which says it is not
// a listener claim), the node its addresses, taints, schedulability, Ready
// condition and the operator's labels. Trimming twice changes
// nothing.
func TestTrimUnrelated(t *testing.T) {
	lastApplied := map[string]string{annotationLastApplied: `{"apiVersion":"v1","kind":"PersistentVolumeClaim"}`}
	id := metav1.ObjectMeta{Name: "data-db-0", Namespace: "ns", UID: "c2", ResourceVersion: "11"}
	full := id
	full.Labels = map[string]string{"app": "db"}
	full.Annotations = lastApplied
	full.Finalizers = []string{"kubernetes.io/pvc-protection"}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	// Of a node's labels only the operator's are read: the CSI topology
	// label (the provisioner asks whether the node plugin runs there).
	nodeID := metav1.ObjectMeta{Name: "n1", UID: "n", ResourceVersion: "5", Labels: map[string]string{v1alpha1.TopologyKeyHostname: "n1"}}
	fullNode := nodeID
	fullNode.Labels = map[string]string{v1alpha1.TopologyKeyHostname: "n1", "kubernetes.io/hostname": "n1", "node.kubernetes.io/instance-type": "m5.xlarge", "topology.kubernetes.io/zone": "zone-a"}
	fullNode.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "csi.volume.kubernetes.io/nodeid": "{}"}
	fullNode.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(100, 0)}
	heartbeat := ready
	heartbeat.LastHeartbeatTime = metav1.Unix(200, 0)
	taints := []corev1.Taint{{Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute}}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}}
	for _, tc := range []struct {
		name     string
		trim     func(any) (any, error)
		in, want any
	}{
		{"ordinary claim", TrimClaim,
			&corev1.PersistentVolumeClaim{ObjectMeta: full, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard"), VolumeName: "pv-1",
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
			&corev1.PersistentVolumeClaim{ObjectMeta: id, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard")}}},
		{"claim without a class", TrimClaim,
			&corev1.PersistentVolumeClaim{ObjectMeta: full},
			&corev1.PersistentVolumeClaim{ObjectMeta: id}},
		{"volume of another driver", TrimVolume,
			&corev1.PersistentVolume{ObjectMeta: full, Spec: corev1.PersistentVolumeSpec{StorageClassName: "standard",
				ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data-db-0"},
				NodeAffinity:           &corev1.VolumeNodeAffinity{Required: pinned},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}}}},
			&corev1.PersistentVolume{ObjectMeta: id}},
		{"volume without CSI", TrimVolume,
			&corev1.PersistentVolume{ObjectMeta: full, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}},
			&corev1.PersistentVolume{ObjectMeta: id}},
		{"node", TrimNode,
			&corev1.Node{ObjectMeta: fullNode, Spec: corev1.NodeSpec{Unschedulable: true, Taints: taints, PodCIDR: "10.1.0.0/24"},
				Status: corev1.NodeStatus{Addresses: addrs, Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure}, heartbeat},
					Images: []corev1.ContainerImage{{Names: []string{"big"}}}, NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3"},
					Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
			&corev1.Node{ObjectMeta: nodeID, Spec: corev1.NodeSpec{Unschedulable: true, Taints: taints},
				Status: corev1.NodeStatus{Addresses: addrs, Conditions: []corev1.NodeCondition{ready}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.trim(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("trimmed:\n got %+v\nwant %+v", got, tc.want)
			}
			again, _ := tc.trim(got)
			if !equality.Semantic.DeepEqual(again, tc.want) {
				t.Fatalf("trimming twice: %+v", again)
			}
		})
	}
}
