package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
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

// stage is one step of a per-claim listener workload, timed from the pod's
// creation.
type stage struct {
	name string
	ds   []float64
}

// stages breaks a phase's per-claim workloads down: from the pod's creation
// (after admission) to its claim, its volume (provisioning), its
// scheduling, its Listener, the Listener's Service and EndpointSlice, the
// Listener Ready (status) and the pod Ready. Timestamps are the API
// server's, to the second.
func (m *measurer) stages(ctx context.Context, phase string) ([]stage, error) {
	names_ := []string{"claim created", "node selected", "volume provisioned", "claim bound", "pod scheduled", "Listener created", "Service created", "EndpointSlice created", "Listener Ready", "pod Ready"}
	out := make([]stage, len(names_))
	for i, n := range names_ {
		out[i].name = n
	}
	var pvs corev1.PersistentVolumeList
	if err := m.c.List(ctx, &pvs); err != nil {
		return nil, err
	}
	pvByClaim := map[string]time.Time{}
	for _, pv := range pvs.Items {
		if r := pv.Spec.ClaimRef; r != nil {
			pvByClaim[r.Namespace+"/"+r.Name] = pv.CreationTimestamp.Time
		}
	}
	for i := range namespaces {
		ns := namespaceName(i)
		var pods corev1.PodList
		var pvcs corev1.PersistentVolumeClaimList
		var ls v1alpha1.ListenerList
		var svcs corev1.ServiceList
		var slices discoveryv1.EndpointSliceList
		for _, l := range []client.ObjectList{&pods, &pvcs, &ls} {
			if err := m.c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
		}
		sel := client.MatchingLabels{v1alpha1.LabelServiceKind: v1alpha1.LabelServiceKindValue}
		if err := m.c.List(ctx, &svcs, client.InNamespace(ns), sel); err != nil {
			return nil, err
		}
		if err := m.c.List(ctx, &slices, client.InNamespace(ns), sel); err != nil {
			return nil, err
		}
		claimAt := map[string]time.Time{}
		selectedAt, boundAt := map[string]time.Time{}, map[string]time.Time{}
		for _, c := range pvcs.Items {
			claimAt[c.Name] = c.CreationTimestamp.Time
			selectedAt[c.Name], boundAt[c.Name] = claimSteps(&c)
		}
		listenerAt, readyAt := map[string]time.Time{}, map[string]time.Time{}
		for _, l := range ls.Items {
			listenerAt[l.Name] = l.CreationTimestamp.Time
			if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
				readyAt[l.Name] = c.LastTransitionTime.Time
			}
		}
		svcAt, sliceAt := map[string]time.Time{}, map[string]time.Time{}
		for _, s := range svcs.Items {
			svcAt[s.Name] = s.CreationTimestamp.Time
		}
		for _, s := range slices.Items {
			name := s.Labels[discoveryv1.LabelServiceName]
			if t, ok := sliceAt[name]; !ok || s.CreationTimestamp.Time.Before(t) {
				sliceAt[name] = s.CreationTimestamp.Time
			}
		}
		for j := range pods.Items {
			p := &pods.Items[j]
			if !strings.HasPrefix(p.Name, "listener-"+phase+"-") || len(p.Spec.Volumes) == 0 || p.Spec.Volumes[0].Ephemeral == nil {
				continue
			}
			t := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate
			if t == nil {
				continue
			}
			claim := names.EphemeralClaimName(p.Name, p.Spec.Volumes[0].Name)
			use := claims.Of(claim, t.Annotations)
			if !use.Own {
				continue // shared Listeners exist before their pods
			}
			listener := use.Listener
			var scheduled time.Time
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
					scheduled = c.LastTransitionTime.Time
				}
			}
			at := []time.Time{claimAt[claim], selectedAt[claim], pvByClaim[ns+"/"+claim], boundAt[claim], scheduled, listenerAt[listener],
				svcAt[names.ServiceName(listener)], sliceAt[names.ServiceName(listener)], readyAt[listener], podRunningAt(p)}
			for k, t := range at {
				if !t.IsZero() {
					out[k].ds = append(out[k].ds, t.Sub(p.CreationTimestamp.Time).Seconds())
				}
			}
		}
	}
	for i := range out {
		sort.Float64s(out[i].ds)
	}
	return out, nil
}

// reportMix writes the realistic mix's part of the table: the cost per
// object of each kind added (between a row and the one before it), per
// listener claim, and the last phase's time to Ready against its floor,
// stage by stage.
func reportMix(w io.Writer, rows []row, large phase, stages []stage, floor, boundFloor []float64) {
	fmt.Fprintln(w, "\nslope per object added (RSS / heap in use / its objects, bytes per object; the row before as base):")
	for i := 1; i < len(rows); i++ {
		if rows[i].added == 0 {
			continue
		}
		d := float64(rows[i].added)
		eachComponent(rows[i], rows[i-1], func(a, b component) {
			fmt.Fprintf(w, "  %-22s %-26s RSS %7.0f B   heap %7.0f B   objects %7.0f B\n", rows[i].kind, a.name, (a.rss-b.rss)/d, (a.heap-b.heap)/d, (a.live-b.live)/d)
		})
	}
	sec := func(ds []float64, p float64) string {
		v := percentile(ds, p)
		if math.IsNaN(v) {
			return "-"
		}
		return (time.Duration(v * float64(time.Second))).Round(100 * time.Millisecond).String()
	}
	fmt.Fprintf(w, "\ntime to Ready, burst of %d listener claims against the floor (%d pods without a listener volume, same run):\n", large.claims, len(floor))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  from pod creation to\tn\tp50\tp99\tmax")
	for _, s := range stages {
		fmt.Fprintf(tw, "  %s (per-claim)\t%d\t%s\t%s\t%s\n", s.name, len(s.ds), sec(s.ds, 0.5), sec(s.ds, 0.99), sec(s.ds, 1))
	}
	fmt.Fprintf(tw, "  floor: pod Ready, no listener volume\t%d\t%s\t%s\t%s\n", len(floor), sec(floor, 0.5), sec(floor, 0.99), sec(floor, 1))
	if len(boundFloor) > 0 {
		fmt.Fprintf(tw, "  bound-volume floor: pod Ready, a static volume Kubernetes binds\t%d\t%s\t%s\t%s\n", len(boundFloor), sec(boundFloor, 0.5), sec(boundFloor, 0.99), sec(boundFloor, 1))
	}
	tw.Flush()
	fmt.Fprintf(w, "  Listener created → Ready (all Listeners of the burst): p50 %s, p99 %s; pod webhook p50 %.1f ms, p99 %.1f ms\n",
		large.readyP50, large.readyP99, large.webhookP50*1000, large.webhookP99*1000)
	if p := percentile(floor, 0.99); !math.IsNaN(p) && p > 0 {
		for _, s := range stages {
			if s.name == "Listener Ready" && len(s.ds) > 0 {
				fmt.Fprintf(w, "  Listener Ready p99 / floor p99 = %.2f\n", percentile(s.ds, 0.99)/p)
				if b := percentile(boundFloor, 0.99); !math.IsNaN(b) && b > 0 {
					fmt.Fprintf(w, "  Listener Ready p99 / bound-volume floor p99 = %.2f\n", percentile(s.ds, 0.99)/b)
				}
			}
		}
	}
}

// claimSteps are when the scheduler selected a node for a claim that binds
// on first consumer (its write of volume.kubernetes.io/selected-node) and
// when the PV controller bound it (kube-controller-manager's write of the
// claim's status), read from the claim's managedFields: each manager's
// entry carries the time of its last write. Zero when not (yet) done.
func claimSteps(c *corev1.PersistentVolumeClaim) (selected, bound time.Time) {
	for _, f := range c.ManagedFields {
		if f.Time == nil {
			continue
		}
		switch {
		case f.Manager == "kube-scheduler":
			selected = f.Time.Time
		case f.Manager == "kube-controller-manager" && f.Subresource == "status" && c.Status.Phase == corev1.ClaimBound:
			bound = f.Time.Time
		}
	}
	return selected, bound
}
