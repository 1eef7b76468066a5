package ordinary

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// LabelPod names an ordinary pod, so that ordinary Service i selects
// ordinary pod i only (one endpoint, as a per-instance Service has).
const LabelPod = "ordinary.example.com/pod"

// AnnotationLastApplied is kubectl's copy of the applied manifest.
const AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// lastAppliedSize is the size of the last-applied annotation of the
// objects measured in issue 23's cluster (kubectl copies the whole
// manifest, comments of templating tools included).
const lastAppliedSize = 1800

// LastApplied is kubectl's last-applied copy of obj, padded to the size of
// a real one.
func LastApplied(obj any) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		// Only the objects of this package are passed: they marshal.
		panic(fmt.Sprintf("marshal %T: %v", obj, err))
	}
	s := strings.TrimSuffix(string(raw), "}")
	return s + `,"x-pad":"` + strings.Repeat("x", max(0, lastAppliedSize-len(raw))) + `"}`
}

// PodName is the name of ordinary pod i.
func PodName(i int) string { return fmt.Sprintf("app-%05d", i) }

// Pod is ordinary pod i in namespace: two containers with 15 env vars
// each, probes, resources and a ConfigMap volume, and no listener volume.
// It is not placed on a node: the caller sets NodeName or tolerations.
func Pod(i int, namespace string) *corev1.Pod {
	container := func(name string) corev1.Container {
		c := corev1.Container{
			Name:  name,
			Image: "registry.example/app/" + name + ":1.2.3",
			Args:  []string{"--config=/etc/app/config.yaml", "--log-level=info"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			// Small requests: make scale packs 10,000 of them on 50
			// kwok nodes.
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}, PeriodSeconds: 5},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/live", Port: intstr.FromString("http")}}, PeriodSeconds: 10},
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
		}
		for e := range 15 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%02d", e), Value: fmt.Sprintf("value-of-setting-%02d-for-%s", e, name)})
		}
		return c
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName(i), Namespace: namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name": "app", "app.kubernetes.io/instance": fmt.Sprintf("app-%d", i/100),
				"pod-template-hash": "5d8f7c9b6", LabelPod: PodName(i),
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
		},
	}
}

// Claim is ordinary claim i in namespace, of storageClass (not this
// driver's), with labels and kubectl's last-applied annotation.
func Claim(i int, namespace, storageClass string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("data-%05d", i), Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/instance": fmt.Sprintf("db-%d", i/100), "app.kubernetes.io/part-of": "storefront"},
			Annotations: map[string]string{
				"backup.example.com/schedule":                   "daily",
				"backup.example.com/retention":                  "7d",
				"volume.beta.kubernetes.io/storage-provisioner": "example.com/block",
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(storageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	c.Annotations[AnnotationLastApplied] = LastApplied(c)
	return c
}

// ServiceName is the name of ordinary Service i.
func ServiceName(i int) string { return fmt.Sprintf("svc-%05d", i) }

// Service is ordinary Service i in namespace; it selects ordinary pod i.
// It is headless: test control planes have small service ranges, and the
// object differs from a ClusterIP Service by its cluster IPs only.
func Service(i int, namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceName(i), Namespace: namespace,
			Labels:      map[string]string{"app.kubernetes.io/name": "app", "app.kubernetes.io/instance": fmt.Sprintf("app-%d", i/100), "app.kubernetes.io/part-of": "storefront"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{LabelPod: PodName(i)},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
}

// EndpointSlice is the slice of ordinary Service i as the EndpointSlice
// controller writes it (the Service's labels copied) with one endpoint, on
// node.
func EndpointSlice(i int, namespace, node string) *discoveryv1.EndpointSlice {
	labels := Service(i, namespace).Labels
	labels[discoveryv1.LabelServiceName] = ServiceName(i)
	labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: ServiceName(i) + "-abcde", Namespace: namespace, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(node), Zone: ptr.To("zone-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: PodName(i), UID: "0b9f3c1e-6a4d-4c59-9a9e-3b8f1e2d7c6a"},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// StaticVolume is static volume i of another CSI driver, pinned to a zone.
func StaticVolume(i int) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-static-%05d", i),
			Labels:      map[string]string{"topology.kubernetes.io/zone": "zone-a"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "standard",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "ebs.csi.aws.com", VolumeHandle: fmt.Sprintf("vol-0a1b2c3d4e5f%05d", i), FSType: "ext4",
				VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-ebs.csi.aws.com"}}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}}}}},
		},
	}
}

// NamespacePrefix begins the name of every ordinary namespace.
const NamespacePrefix = "tenant-"

// NamespaceName is the name of ordinary namespace i.
func NamespaceName(i int) string { return fmt.Sprintf("%s%05d", NamespacePrefix, i) }

// Namespace is ordinary namespace i as a platform team's tooling leaves it:
// the name label the API server adds, a team's and the pod security
// admission's labels, the annotations of a cluster's other tools and
// kubectl's last-applied copy.
func Namespace(i int) *corev1.Namespace {
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name: NamespaceName(i),
			Labels: map[string]string{"kubernetes.io/metadata.name": NamespaceName(i), "team.example.com/name": fmt.Sprintf("team-%d", i/10),
				"environment": "production", "pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"},
			Annotations: map[string]string{
				"scheduler.alpha.kubernetes.io/node-selector": "node-role.example.com/workload=true",
				"team.example.com/contact":                    fmt.Sprintf("team-%d@example.com", i/10),
				"team.example.com/cost-center":                fmt.Sprintf("cc-%04d", i%997),
			},
		},
	}
	ns.Annotations[AnnotationLastApplied] = LastApplied(ns)
	return ns
}

// Node is a node named name as a cloud kubelet reports it: labels,
// annotations, conditions, capacity and ten images.
func Node(name string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "m5.xlarge", "topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1"},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid": `{"ebs.csi.aws.com":"i-0123456789abcdef0","listeners.stackable.tech":"` + name + `"}`}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", ProviderID: "aws:///zone-a/i-0123456789abcdef0"},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}, {Type: corev1.NodeHostName, Address: name}},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110")},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.0.0", KernelVersion: "6.8.0"},
		},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient" + string(c), Message: "kubelet has sufficient " + string(c)})
	}
	for k := range 10 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/image-%d@sha256:%064d", k, k)}, SizeBytes: 100 << 20})
	}
	return n
}
