package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/ordinary"
)

// The realistic mix (issue 23): besides ordinary pods, a cluster holds
// claims of other storage classes, with kubectl's last-applied copy,
// Services with their EndpointSlices and namespaces, none of them a
// listener's.

// ordinaryClass is the storage class of the ordinary claims. No provisioner
// serves it: the claims stay Pending, as many do (WaitForFirstConsumer).
const ordinaryClass = "scale-standard"

// ordinaryClaim is ordinary claim i (internal/ordinary: another storage
// class, labels, kubectl's last-applied annotation of about 1.8 KB).
func ordinaryClaim(i int) *corev1.PersistentVolumeClaim {
	return ordinary.Claim(i, namespaceName(i), ordinaryClass)
}

// ordinaryService is ordinary Service i: it selects ordinary pod i (one
// endpoint, as a per-instance Service has), so the EndpointSlice
// controller gives it a slice. It is headless: the project's cluster has a
// service range of about 4,000 addresses.
func ordinaryService(i int) *corev1.Service {
	return ordinary.Service(i, namespaceName(i))
}

// floorPod is pod i of the floor burst: a pod like a listener workload's
// but without the listener volume, so its time to Running is what the
// cluster itself costs.
func floorPod(i int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("floor-%04d", i), Namespace: namespaceName(i)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/kafka:1.0",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
	}
	kwokPlacement(&p.Spec)
	return p
}

// slicesOfServices counts the EndpointSlices of ordinary Services.
func slicesOfServices(ctx context.Context, c client.Client) (int, error) {
	n := 0
	for i := range namespaces {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSliceList"))
		if err := c.List(ctx, &list, client.InNamespace(namespaceName(i)), client.MatchingLabels{"app.kubernetes.io/part-of": "storefront"}); err != nil {
			return 0, err
		}
		n += len(list.Items)
	}
	return n, nil
}

// namespacesFilled counts the ordinary namespaces that kube-controller-manager
// has given what it gives every namespace (the root CA's ConfigMap), so that
// its work on them is over before the next step is measured.
func namespacesFilled(ctx context.Context, c client.Client) (int, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := c.List(ctx, &list, client.MatchingFields{"metadata.name": "kube-root-ca.crt"}); err != nil {
		return 0, err
	}
	n := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Namespace, ordinary.NamespacePrefix) {
			n++
		}
	}
	return n, nil
}

// podRunningAt is when a pod became Ready (kwok sets the condition), or
// zero.
func podRunningAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// floor creates n pods without listener volumes at once (as many workers as
// the listener burst) and returns each one's time from creation to Ready.
func (m *measurer) floor(ctx context.Context, n int) ([]float64, error) {
	say("floor: %d pods without a listener volume", n)
	if _, err := createAll(ctx, m.c, 0, n, 8, func(i int) client.Object { return floorPod(i) }); err != nil {
		return nil, err
	}
	return m.readyTimes(ctx, "floor-", n)
}

// boundFloor is the floor of a pod with a volume that Kubernetes alone
// binds: n pods, each with a claim of its own that is created just after
// it (as the ephemeral volume controller does) already naming a static
// volume of another driver, created with it. No listener operator part is
// involved: the PV controller binds each claim to its volume and the
// scheduler waits for that, which is what every listener volume goes
// through too.
func (m *measurer) boundFloor(ctx context.Context, n int) ([]float64, error) {
	say("bound-volume floor: %d pods with a static volume bound by Kubernetes", n)
	if _, err := createAll(ctx, m.c, 0, n, 8, func(i int) client.Object { return boundFloorPod(i) }); err != nil {
		return nil, err
	}
	if _, err := createAll(ctx, m.c, 0, n, 8, func(i int) client.Object { return boundFloorVolume(i) }); err != nil {
		return nil, err
	}
	if _, err := createAll(ctx, m.c, 0, n, 8, func(i int) client.Object { return boundFloorClaim(i) }); err != nil {
		return nil, err
	}
	return m.readyTimes(ctx, "boundfloor-", n)
}

// readyTimes waits until n pods named prefix* are Ready and returns each
// one's time from creation to Ready.
func (m *measurer) readyTimes(ctx context.Context, prefix string, n int) ([]float64, error) {
	var ds []float64
	err := waitFor(ctx, 15*time.Minute, fmt.Sprintf("%d %s pods Ready", n, strings.TrimSuffix(prefix, "-")), func() (bool, string, error) {
		ds = ds[:0]
		for i := range namespaces {
			var pods corev1.PodList
			if err := m.c.List(ctx, &pods, client.InNamespace(namespaceName(i))); err != nil {
				return false, "", err
			}
			for j := range pods.Items {
				p := &pods.Items[j]
				if strings.HasPrefix(p.Name, prefix) {
					if t := podRunningAt(p); !t.IsZero() {
						ds = append(ds, t.Sub(p.CreationTimestamp.Time).Seconds())
					}
				}
			}
		}
		return len(ds) >= n, fmt.Sprintf("%d/%d Ready", len(ds), n), nil
	})
	return ds, err
}

// boundFloorPod is pod i of the bound-volume floor: a floor pod with claim
// boundFloorClaim(i) mounted.
func boundFloorPod(i int) *corev1.Pod {
	p := floorPod(i)
	p.Name = fmt.Sprintf("boundfloor-%04d", i)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.Name},
	}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

// boundFloorVolume is the static volume of boundFloorClaim(i), reserved for
// it (claimRef), of a driver nobody runs (kwok mounts nothing).
func boundFloorVolume(i int) *corev1.PersistentVolume {
	pv := ordinary.StaticVolume(100000 + i)
	pv.Name = fmt.Sprintf("boundfloor-%04d", i)
	pv.Spec.StorageClassName = ""
	pv.Spec.NodeAffinity = nil
	pv.Spec.ClaimRef = &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: namespaceName(i), Name: pv.Name}
	return pv
}

// boundFloorClaim is the claim of boundFloorPod(i), naming its volume.
func boundFloorClaim(i int) *corev1.PersistentVolumeClaim {
	name := fmt.Sprintf("boundfloor-%04d", i)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespaceName(i)},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(""),
			VolumeName:       name,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
}

// mixKind is one kind of the realistic mix's other objects.
type mixKind struct {
	what  string
	n     int
	make  func(int) client.Object
	ready func() (bool, string, error) // nil: created is enough
}

// mixKinds are the rest of the realistic mix, in the order they are
// added: ordinary claims, static volumes of another driver, ordinary
// Services with their EndpointSlices, then ordinary namespaces.
func (m *measurer) mixKinds(ctx context.Context, o options) []mixKind {
	return []mixKind{
		{"ordinary claims", o.claims, func(i int) client.Object { return ordinaryClaim(i) }, nil},
		{"volumes of another driver", o.volumes, func(i int) client.Object { return ordinary.StaticVolume(i) }, nil},
		{"ordinary Services", o.services, func(i int) client.Object { return ordinaryService(i) }, func() (bool, string, error) {
			n, err := slicesOfServices(ctx, m.c)
			return n >= o.services, fmt.Sprintf("%d/%d EndpointSlices", n, o.services), err
		}},
		{"ordinary namespaces", o.namespaces, func(i int) client.Object { return ordinary.Namespace(i) }, func() (bool, string, error) {
			n, err := namespacesFilled(ctx, m.c)
			return n >= o.namespaces, fmt.Sprintf("%d/%d namespaces filled by kube-controller-manager", n, o.namespaces), err
		}},
	}
}

// mixSteps adds each kind of the mix that o asks for and measures after
// each.
func (m *measurer) mixSteps(ctx context.Context, o options) ([]row, error) {
	var rows []row
	for _, k := range m.mixKinds(ctx, o) {
		if k.n == 0 {
			continue
		}
		r, err := m.mixStep(ctx, k)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// mixStep creates the objects of one kind, waits until they are ready and
// measures.
func (m *measurer) mixStep(ctx context.Context, k mixKind) (row, error) {
	say("creating %d %s", k.n, k.what)
	start := time.Now()
	if _, err := createAll(ctx, m.c, 0, k.n, 32, k.make); err != nil {
		return row{}, err
	}
	if k.ready != nil {
		if err := waitFor(ctx, 20*time.Minute, k.what, k.ready); err != nil {
			return row{}, err
		}
	}
	say("%d %s in %s", k.n, k.what, time.Since(start).Round(time.Second))
	r, err := m.measure(ctx, fmt.Sprintf("+ %d %s", k.n, k.what))
	r.added, r.kind = k.n, k.what
	return r, err
}
