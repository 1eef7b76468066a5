package caches

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// What one listener claim brings into the caches, kind by kind, as the
// cluster makes them for a pod with a generic ephemeral listener volume and
// a per-claim Listener: the claim, its volume, the Listener, its Service
// and EndpointSlice, the pod and its PodListeners. Objects whose status
// the API server takes only through the status subresource (claim,
// volume) are measured without it, but for the pod and the Listener: the
// reconcilers keep the pod's Ready condition, so it gets a running pod's
// status, and the Listener the status the operator writes.

const listenerNamespace = "cache-listener"

func listenerClaimName(i int) string { return fmt.Sprintf("kafka-%05d-listener", i) }

var listenerKinds = []struct {
	name string
	make func(i int) client.Object
	// create are the options the object is created with: as the
	// operator creates it (its field manager), where it does.
	create []client.CreateOption
	// status, when set, is written on each object after its create,
	// through the status subresource (as the kubelet writes a pod's).
	status func(client.Object)
}{
	{"listener claim", func(i int) client.Object {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: listenerClaimName(i), Namespace: listenerNamespace,
				// Marked by the claim webhook.
				Labels: map[string]string{"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "kafka", v1alpha1.LabelListenerVolume: "true"},
				Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external-unstable",
					"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
					"volume.beta.kubernetes.io/storage-provisioner": v1alpha1.DriverName, "volume.kubernetes.io/storage-provisioner": v1alpha1.DriverName,
					"volume.kubernetes.io/selected-node": fmt.Sprintf("node-%02d", i%50)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: fmt.Sprintf("kafka-%05d", i), UID: types.UID(fmt.Sprintf("0b9f3c1e-6a4d-4c59-9a9e-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(v1alpha1.StorageClassName),
				VolumeName:       fmt.Sprintf("pvc-0b9f3c1e-6a4d-4c59-9a9e-%012d", i),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
			},
		}
	}, nil, nil},
	{"listener volume", func(i int) client.Object {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pvc-0b9f3c1e-6a4d-4c59-9a9e-%012d", i),
				// Marked, with its Listener, by the claim reconciler.
				Labels:      map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelVolumeListener: listenerClaimName(i)},
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": v1alpha1.DriverName, "volume.kubernetes.io/provisioner-deletion-secret-name": "", "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              v1alpha1.StorageClassName,
				VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: listenerNamespace, Name: listenerClaimName(i), UID: types.UID(fmt.Sprintf("1c9f3c1e-6a4d-4c59-9a9e-%012d", i)), ResourceVersion: "12345"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: v1alpha1.DriverName, VolumeHandle: fmt.Sprintf("pvc-0b9f3c1e-6a4d-4c59-9a9e-%012d", i),
					VolumeAttributes: map[string]string{"listeners.stackable.tech/listener-name": listenerClaimName(i), "storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-listeners.stackable.tech"}}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("node-%02d", i%50)}}}}}}},
			},
		}
	}, nil, nil},
	{"Listener", func(i int) client.Object {
		return &v1alpha1.Listener{
			ObjectMeta: metav1.ObjectMeta{Name: listenerClaimName(i), Namespace: listenerNamespace,
				Labels:          map[string]string{"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "kafka"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: listenerClaimName(i), UID: types.UID(fmt.Sprintf("1c9f3c1e-6a4d-4c59-9a9e-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr.To("external-unstable"), Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092, Protocol: corev1.ProtocolTCP}}},
		}
	}, nil, listenerStatus},
	{"listener Service", func(i int) client.Object {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: listenerClaimName(i), Namespace: listenerNamespace,
				Labels: map[string]string{"app.kubernetes.io/name": "listener", "app.kubernetes.io/instance": listenerClaimName(i), "app.kubernetes.io/managed-by": v1alpha1.FieldManager},
				// A hash of the Service, its name among what it hashes:
				// no two Services have the same.
				Annotations:     map[string]string{"listeners.stackable.tech/service-hash": fmt.Sprintf("3f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f%010d", i)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: listenerClaimName(i), UID: types.UID(fmt.Sprintf("2c9f3c1e-6a4d-4c59-9a9e-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: corev1.ServiceSpec{
				// Headless: the test control plane's service range is small.
				ClusterIP:                corev1.ClusterIPNone,
				Selector:                 map[string]string{v1alpha1.PodSelectorLabelPrefix + listenerClaimName(i): "true"},
				Ports:                    []corev1.ServicePort{{Name: "kafka", Port: 9092, Protocol: corev1.ProtocolTCP}},
				PublishNotReadyAddresses: true,
			},
		}
	}, []client.CreateOption{client.FieldOwner(v1alpha1.FieldManager)}, nil},
	{"listener EndpointSlice", func(i int) client.Object {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: listenerClaimName(i) + "-x7k2p", Namespace: listenerNamespace,
				Labels: map[string]string{"app.kubernetes.io/name": "listener", "app.kubernetes.io/instance": listenerClaimName(i), "app.kubernetes.io/managed-by": v1alpha1.FieldManager,
					discoveryv1.LabelServiceName: listenerClaimName(i), discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: listenerClaimName(i), UID: types.UID(fmt.Sprintf("3c9f3c1e-6a4d-4c59-9a9e-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(fmt.Sprintf("node-%02d", i%50)),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: listenerNamespace, Name: fmt.Sprintf("kafka-%05d", i), UID: "0b9f3c1e-6a4d-4c59-9a9e-3b8f1e2d7c6a"},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("kafka"), Port: ptr.To[int32](9092), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
	}, nil, nil},
	{"listener pod", func(i int) client.Object {
		p := ordinaryPod(i)
		p.Name, p.Namespace = fmt.Sprintf("kafka-%05d", i), listenerNamespace
		// A StatefulSet's pod, as a data product's are.
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "kafka", UID: "5d1e7a2b-8c3f-4e6a-9b0d-1f2e3a4b5c6d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		p.Labels[v1alpha1.LabelListenerVolume] = "true"
		p.Labels[v1alpha1.PodSelectorLabelPrefix+listenerClaimName(i)] = "true"
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerClass: "external-unstable"}},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
			}}}})
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("node-%02d", i%50)}}}}}}}}
		return p
	}, nil, runningPodStatus},
	{"PodListeners", func(i int) client.Object {
		return &v1alpha1.PodListeners{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-0b9f3c1e-6a4d-4c59-9a9e-%012d", i), Namespace: listenerNamespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": v1alpha1.FieldManager},
				// The hash of its spec (v1alpha1.AnnotationPodListenersHash),
				// which the metadata-only cache keeps: no two pods' are alike.
				Annotations:     map[string]string{"listeners.stackable.tech/podlisteners-hash": fmt.Sprintf("%016x", 0x10804fddfa2aee07+i)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: fmt.Sprintf("kafka-%05d", i), UID: types.UID(fmt.Sprintf("0b9f3c1e-6a4d-4c59-9a9e-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"listener": {Scope: v1alpha1.PodListenerScopeNode,
				IngressAddresses: []v1alpha1.ListenerIngress{{Address: "192.168.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": 31092}}}}}},
		}
	}, nil, nil},
}

// BenchmarkListenerObjects: heap in use per object of each kind a listener
// claim brings, with the shipped policy and with each trick off
// (trickConfigs, measured in the same process), at two sizes (the slope between them); the sum is the
// cost of one per-claim listener workload on the leader (replica-B/obj: on
// every replica; leader-inuse-B/obj: the heap spans those bytes keep in
// use, the room the objects dropped left in them included). Run with
// -benchtime=1x; LISTENER_SIZES=small,large overrides the sizes,
// LISTENER_KINDS=Listener,"listener pod" measures only those kinds,
// CACHE_CONFIGS only those configurations.
func BenchmarkListenerObjects(b *testing.B) {
	e := testenv.Require(b, env)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listenerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	sizes := benchSizesFrom(b, "LISTENER_SIZES", []int{1000, 5000})
	configs := trickConfigs(b)
	only := os.Getenv("LISTENER_KINDS") // e.g. "Listener"; empty: every kind
	for _, k := range listenerKinds {
		if only != "" && !slices.Contains(strings.Split(only, ","), k.name) {
			continue
		}
		h := make(map[string][2][2]heapReading, len(configs))
		created := 0
		for si, n := range sizes {
			start := time.Now()
			if err := ensureObjects(ctx, e.Client, created, n, k.make, k.create...); err != nil {
				b.Fatal(err)
			}
			if k.status != nil {
				if err := writeStatuses(ctx, e.Client, created, n, k.make, k.status); err != nil {
					b.Fatal(err)
				}
			}
			created = n
			b.Logf("%d %ss in %s", n, k.name, time.Since(start).Round(time.Second))
			for _, cfg := range configs {
				b.Run(fmt.Sprintf("kind=%s/cache=%s/n=%d", k.name, cfg.name, n), func(b *testing.B) {
					var w, l heapReading
					for range b.N {
						w, l = medianHeaps(b, cfg)
					}
					hc := h[cfg.name]
					hc[si] = [2]heapReading{w, l}
					h[cfg.name] = hc
					b.ReportMetric(l.live/(1<<20), "leader-heap-MiB")
					if si == 1 {
						d := float64(sizes[1] - sizes[0])
						b.ReportMetric((w.live-hc[0][0].live)/d, "replica-B/obj")
						b.ReportMetric((l.live-hc[0][1].live)/d, "leader-B/obj")
						b.ReportMetric((l.inUse-hc[0][1].inUse)/d, "leader-inuse-B/obj")
					}
				})
			}
		}
	}
}

// listenerStatus is the status the operator writes on a Ready Listener:
// half ClusterIP (its Service's name as the address), half NodePort (the
// nodes of its pods, here two of 50, and its node ports).
func listenerStatus(o client.Object) {
	l := o.(*v1alpha1.Listener)
	var i int
	if _, err := fmt.Sscanf(l.Name, "kafka-%05d-listener", &i); err != nil {
		panic(err) // listenerClaimName made it
	}
	l.Status = v1alpha1.ListenerStatus{ServiceName: l.Name, ServiceType: v1alpha1.ServiceTypeClusterIP, ClassName: "cluster-internal",
		IngressAddresses: []v1alpha1.ListenerIngress{{Address: l.Name + "." + l.Namespace + ".svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 9092}}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now(),
			Message: fmt.Sprintf("Service %s publishes 1 address(es)", l.Name)}}}
	if i%2 == 1 {
		port := int32(30000 + i%2768)
		l.Status.ServiceType, l.Status.ClassName = v1alpha1.ServiceTypeNodePort, "external-unstable"
		l.Status.NodePorts = map[string]int32{"kafka": port}
		l.Status.IngressAddresses = []v1alpha1.ListenerIngress{
			{Address: fmt.Sprintf("10.91.0.%d", i%50), AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": port}},
			{Address: fmt.Sprintf("10.91.0.%d", (i+1)%50), AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": port}}}
		l.Status.Conditions[0].Message = fmt.Sprintf("Service %s publishes 2 address(es)", l.Name)
	}
}

// runningPodStatus is the status the kubelet writes for a running pod.
func runningPodStatus(o client.Object) {
	p := o.(*corev1.Pod)
	now := metav1.Now()
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		HostIP: "192.168.0.1", PodIP: "10.244.1.7", PodIPs: []corev1.PodIP{{IP: "10.244.1.7"}},
		StartTime: &now, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: true, Started: ptr.To(true), Image: p.Spec.Containers[0].Image,
			ImageID:     "registry.example/kafka@sha256:4f5e6d7c8b9a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0",
			ContainerID: "containerd://8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
}

// writeStatuses writes status on objects [from, n) of a kind: it reads
// each, sets its status and updates the subresource.
func writeStatuses(ctx context.Context, c client.Client, from, n int, newObj func(int) client.Object, status func(client.Object)) error {
	return eachObject(from, n, func(i int) error {
		obj := newObj(i)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("read %T %d: %w", obj, i, err)
		}
		status(obj)
		if err := c.Status().Update(ctx, obj); err != nil {
			return fmt.Errorf("status of %T %d: %w", obj, i, err)
		}
		return nil
	})
}

// trimPodListenersMetadata is what the reconcilers would keep of a
// PodListeners in an informer of its metadata (as until PodListenersHashes):
// its owner, with the UID held in the name's memory, and the operator's
// annotations.
func trimPodListenersMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	m.ManagedFields = nil
	m.Labels = nil
	m.Annotations = operatorEntries(m.Annotations)
	if uid, ok := strings.CutPrefix(m.Name, v1alpha1.PodListenersNamePrefix); ok {
		for i := range m.OwnerReferences {
			r := &m.OwnerReferences[i]
			r.UID = types.UID(inName(string(r.UID), uid))
		}
	}
	(*interner)(nil).meta(m)
	return m, nil
}
