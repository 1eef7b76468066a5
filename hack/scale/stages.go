package main

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

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
		t, err := m.namespaceTimes(ctx, ns)
		if err != nil {
			return nil, err
		}
		t.volumeAt = func(claim string) time.Time { return pvByClaim[ns+"/"+claim] }
		for j := range t.pods {
			p := &t.pods[j]
			if !strings.HasPrefix(p.Name, "listener-"+phase+"-") {
				continue
			}
			for k, at := range t.of(p) {
				if !at.IsZero() {
					out[k].ds = append(out[k].ds, at.Sub(p.CreationTimestamp.Time).Seconds())
				}
			}
		}
	}
	for i := range out {
		sort.Float64s(out[i].ds)
	}
	return out, nil
}

// times are when the objects of one namespace were created or reached a
// step, by name.
type times struct {
	pods                         []corev1.Pod
	claimAt, selectedAt, boundAt map[string]time.Time // claims
	listenerAt, readyAt          map[string]time.Time // Listeners
	svcAt, sliceAt               map[string]time.Time // Services, by name
	volumeAt                     func(claim string) time.Time
}

// namespaceTimes reads the pods, claims, Listeners, and the operator's
// Services and their EndpointSlices of namespace ns.
func (m *measurer) namespaceTimes(ctx context.Context, ns string) (times, error) {
	var pvcs corev1.PersistentVolumeClaimList
	var ls v1alpha1.ListenerList
	var svcs corev1.ServiceList
	var slices discoveryv1.EndpointSliceList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&pods, &pvcs, &ls} {
		if err := m.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return times{}, err
		}
	}
	sel := client.MatchingLabels{v1alpha1.LabelServiceKind: v1alpha1.LabelServiceKindValue}
	if err := m.c.List(ctx, &svcs, client.InNamespace(ns), sel); err != nil {
		return times{}, err
	}
	if err := m.c.List(ctx, &slices, client.InNamespace(ns), sel); err != nil {
		return times{}, err
	}
	t := times{pods: pods.Items, claimAt: map[string]time.Time{}, selectedAt: map[string]time.Time{}, boundAt: map[string]time.Time{},
		listenerAt: map[string]time.Time{}, readyAt: map[string]time.Time{}, svcAt: map[string]time.Time{}, sliceAt: map[string]time.Time{}}
	for _, c := range pvcs.Items {
		t.claimAt[c.Name] = c.CreationTimestamp.Time
		t.selectedAt[c.Name], t.boundAt[c.Name] = claimSteps(&c)
	}
	for _, l := range ls.Items {
		t.listenerAt[l.Name] = l.CreationTimestamp.Time
		if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
			t.readyAt[l.Name] = c.LastTransitionTime.Time
		}
	}
	for _, s := range svcs.Items {
		t.svcAt[s.Name] = s.CreationTimestamp.Time
	}
	for _, s := range slices.Items {
		name := s.Labels[discoveryv1.LabelServiceName]
		if at, ok := t.sliceAt[name]; !ok || s.CreationTimestamp.Time.Before(at) {
			t.sliceAt[name] = s.CreationTimestamp.Time
		}
	}
	return t, nil
}

// of returns the times of each stage of pod p's per-claim workload, in the
// order of stages (zero: not reached), or nil when p has no claim of its
// own (a shared Listener exists before its pods).
func (t times) of(p *corev1.Pod) []time.Time {
	if len(p.Spec.Volumes) == 0 || p.Spec.Volumes[0].Ephemeral == nil || p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate == nil {
		return nil
	}
	claim := names.EphemeralClaimName(p.Name, p.Spec.Volumes[0].Name)
	use := claims.Of(claim, p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Annotations)
	if !use.Own {
		return nil
	}
	listener := use.Listener
	var scheduled time.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			scheduled = c.LastTransitionTime.Time
		}
	}
	return []time.Time{t.claimAt[claim], t.selectedAt[claim], t.volumeAt(claim), t.boundAt[claim], scheduled, t.listenerAt[listener],
		t.svcAt[names.ServiceName(listener)], t.sliceAt[names.ServiceName(listener)], t.readyAt[listener], podRunningAt(p)}
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
