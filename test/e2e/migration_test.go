//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// stackableFieldManager is the field manager and managed-by label of the
// Stackable listener-operator's Services.
const stackableFieldManager = "listeners.stackable.tech_listener"

// TestMigrationFromStackable switches a running StatefulSet from the state
// the Stackable listener-operator leaves to this operator (docs/migration.md)
// and checks that no client notices.
//
// How "their state, then install ours" is made on a cluster that runs ours:
//  1. Ours brings up a StatefulSet with per-claim NodePort Listeners, so
//     that the pods run with trees (their node plugin writes the same
//     paths and contents; the node plugin stays: kubelet republishes with
//     ours, as after the switch).
//  2. "Uninstall ours": the operator Deployment is scaled to zero and its
//     webhook configurations are deleted (saved), as after `helm
//     uninstall` of theirs nothing reconciles or admits.
//  3. Everything is rewritten the way their operator leaves it: pods carry
//     listener.stackable.tech/mnt.<Listener uid without dashes>=<name> and
//     not ours; each Service selects that label, carries their managed-by
//     label and not our hash, written by their field manager; each
//     per-claim Listener is owned by its claim's PersistentVolume (no
//     controller) and has their status (serviceName, ingressAddresses,
//     nodePorts; no conditions, no serviceType).
//  4. "Install ours": the webhook configurations come back and the
//     Deployment scales up.
//
// From step 3 to the end a sampler lists the EndpointSlices every 100 ms:
// no Service may be without its pod for a single sample. At the end every
// Service has the same UID, clusterIP and node ports, every Listener the
// same addresses, every pod the same tree, the selectors are ours, the
// Listeners are the claims' again, and a new replica gets its address.
func TestMigrationFromStackable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	ns := namespace(t, ctx, "migration")
	class := listenerClass("e2e-migration", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP})
	ensureClass(t, ctx, class)
	sts := demoStatefulSet(ns, "kafka", class.Name, 2)
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	pods := podsReady(t, ctx, ns, sts.Name, 2, 3*time.Minute)

	// What clients see before the switch.
	type before struct {
		listener *v1alpha1.Listener
		svc      *corev1.Service
		tree     map[string]string
		pod      *corev1.Pod
	}
	state := map[string]*before{}
	for name, p := range pods {
		l := readyListener(t, ctx, ns, name)
		svc := &corev1.Service{}
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, svc); err != nil {
			t.Fatal(err)
		}
		state[name] = &before{listener: l, svc: svc, tree: tree(t, ctx, ns, name), pod: p}
	}

	// 2. Uninstall ours (restored whatever happens).
	restore := uninstallOperator(t, ctx)
	t.Cleanup(restore)

	// The sampler starts before the rewrite: their state must keep every pod
	// an endpoint too.
	samples := startEndpointSampler(ctx, ns)

	// 3. Their state.
	for name, b := range state {
		l := b.listener
		theirKey := v1alpha1.PodSelectorLabelPrefix + strings.ReplaceAll(string(l.UID), "-", "")
		ourKey := names.PodSelectorLabel(l.Name)
		patchJSON(t, ctx, b.pod, "merge", map[string]any{"metadata": map[string]any{"labels": map[string]any{theirKey: l.Name}}})
		patchJSON(t, ctx, b.svc, "json", []map[string]any{
			{"op": "replace", "path": "/spec/selector", "value": map[string]string{theirKey: l.Name}},
			{"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1managed-by", "value": stackableFieldManager},
			{"op": "remove", "path": "/metadata/annotations/listeners.stackable.tech~1service-hash"},
		})
		patchJSON(t, ctx, b.pod, "merge", map[string]any{"metadata": map[string]any{"labels": map[string]any{ourKey: nil}}})

		claim := &corev1.PersistentVolumeClaim{}
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Name}, claim); err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{}
		if err := k8s.client.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
			t.Fatal(err)
		}
		// Their StatefulSets' claim templates do not name themselves (ours
		// do, so that a new replica's Listener selects it by pod name).
		patchJSON(t, ctx, claim, "merge", map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.AnnotationStatefulSetClaimTemplate: nil}}})
		theirs := &v1alpha1.Listener{}
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), theirs); err != nil {
			t.Fatal(err)
		}
		theirs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolume", Name: pv.Name, UID: pv.UID}}
		delete(theirs.Annotations, v1alpha1.AnnotationStatefulSetPod)
		if err := k8s.client.Update(ctx, theirs); err != nil {
			t.Fatalf("give Listener %s their owner: %v", l.Name, err)
		}
		theirs.Status = v1alpha1.ListenerStatus{ServiceName: l.Status.ServiceName, IngressAddresses: l.Status.IngressAddresses, NodePorts: l.Status.NodePorts}
		if err := k8s.client.Status().Update(ctx, theirs); err != nil {
			t.Fatalf("give Listener %s their status: %v", l.Name, err)
		}
		if got := tree(t, ctx, ns, name); !maps.Equal(got, b.tree) {
			t.Errorf("pod %s reads another tree in the Stackable state:\n%v\nwas:\n%v", name, got, b.tree)
		}
	}
	for _, b := range state {
		svc := &corev1.Service{}
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(b.svc), svc); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(slices.Collect(maps.Keys(svc.Spec.Selector))[0], v1alpha1.PodSelectorLabelPrefix) || svc.Labels["app.kubernetes.io/managed-by"] != stackableFieldManager {
			t.Fatalf("Service %s is not in the Stackable operator's shape: selector %v, labels %v", svc.Name, svc.Spec.Selector, svc.Labels)
		}
	}

	// 4. Install ours.
	start := time.Now()
	restore()
	for name, b := range state {
		l := b.listener
		ourKey := names.PodSelectorLabel(l.Name)
		eventually(t, ctx, 2*time.Minute, "the Service of "+name+" selects by our label and its Listener is the claim's and Ready", func(ctx context.Context) (bool, string) {
			svc := &corev1.Service{}
			if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(b.svc), svc); err != nil {
				return false, err.Error()
			}
			if !maps.Equal(svc.Spec.Selector, map[string]string{ourKey: v1alpha1.PodSelectorLabelValue}) {
				return false, fmt.Sprintf("selector %v", svc.Spec.Selector)
			}
			now := &v1alpha1.Listener{}
			if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), now); err != nil {
				return false, err.Error()
			}
			ctl := metav1.GetControllerOf(now)
			cond := meta.FindStatusCondition(now.Status.Conditions, v1alpha1.ConditionReady)
			if ctl == nil || ctl.Kind != "PersistentVolumeClaim" || cond == nil || cond.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("controller %v, Ready %v", ctl, cond)
			}
			return true, ""
		})
	}
	t.Logf("takeover took %s after the operator was restored", time.Since(start).Round(time.Second))

	for name, b := range state {
		svc := &corev1.Service{}
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(b.svc), svc); err != nil {
			t.Fatal(err)
		}
		if svc.UID != b.svc.UID || svc.Spec.ClusterIP != b.svc.Spec.ClusterIP || !slices.Equal(nodePorts(svc), nodePorts(b.svc)) {
			t.Errorf("Service %s changed: uid %s→%s, clusterIP %s→%s, node ports %v→%v", svc.Name,
				b.svc.UID, svc.UID, b.svc.Spec.ClusterIP, svc.Spec.ClusterIP, nodePorts(b.svc), nodePorts(svc))
		}
		l := readyListener(t, ctx, ns, name)
		if l.UID != b.listener.UID || !ingressEqual(l.Status.IngressAddresses, b.listener.Status.IngressAddresses) {
			t.Errorf("Listener %s changed: uid %s→%s, addresses %v→%v", l.Name, b.listener.UID, l.UID, b.listener.Status.IngressAddresses, l.Status.IngressAddresses)
		}
		p := &corev1.Pod{}
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(b.pod), p); err != nil || p.UID != b.pod.UID {
			t.Errorf("pod %s was replaced (%v)", name, err)
		}
		if got := tree(t, ctx, ns, name); !maps.Equal(got, b.tree) {
			t.Errorf("pod %s reads another tree after the switch:\n%v\nwas:\n%v", name, got, b.tree)
		}
	}
	gaps := samples.stop()
	if len(gaps) > 0 {
		t.Errorf("moments without endpoints (of %d samples):\n%s", samples.count(), strings.Join(gaps, "\n"))
	} else {
		t.Logf("%d EndpointSlice samples, every Service had its pod in each", samples.count())
	}

	// A new replica, a new claim: works as on a fresh install.
	patchJSON(t, ctx, sts, "merge", map[string]any{"spec": map[string]any{"replicas": 3}})
	podsReady(t, ctx, ns, sts.Name, 3, 3*time.Minute)
	files := tree(t, ctx, ns, sts.Name+"-2")
	addr, port := defaultAddress(t, files)
	answers(t, ctx, addr, port, sts.Name+"-2")
}

// readyListener waits until the Listener of a StatefulSet pod's claim is
// Ready with addresses and returns it.
func readyListener(t *testing.T, ctx context.Context, ns, pod string) *v1alpha1.Listener {
	t.Helper()
	var l *v1alpha1.Listener
	eventually(t, ctx, time.Minute, "Listener of "+pod+" Ready with addresses", func(ctx context.Context) (bool, string) {
		l = listener(t, ctx, ns, pod)
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && len(l.Status.IngressAddresses) > 0, fmt.Sprintf("%v %v", cond, l.Status.IngressAddresses)
	})
	return l
}

func nodePorts(s *corev1.Service) []int32 {
	var out []int32
	for _, p := range s.Spec.Ports {
		out = append(out, p.NodePort)
	}
	slices.Sort(out)
	return out
}

func ingressEqual(a, b []v1alpha1.ListenerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.ListenerIngress) bool {
		return x.Address == y.Address && x.AddressType == y.AddressType && maps.Equal(x.Ports, y.Ports)
	})
}

// patchJSON patches obj with a merge ("merge") or JSON ("json") patch.
func patchJSON(t *testing.T, ctx context.Context, obj client.Object, kind string, patch any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	pt := types.MergePatchType
	if kind == "json" {
		pt = types.JSONPatchType
	}
	if err := k8s.client.Patch(ctx, obj, client.RawPatch(pt, raw), client.FieldOwner(stackableFieldManager)); err != nil {
		t.Fatalf("patch %T %s: %v", obj, obj.GetName(), err)
	}
}

// uninstallOperator scales the operator to zero and deletes its webhook
// configurations; the function it returns puts both back (once; safe to
// call again) and waits until the operator is available.
func uninstallOperator(t *testing.T, ctx context.Context) func() {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	var saved []*unstructured.Unstructured
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("admissionregistration.k8s.io/v1")
		list.SetKind(kind + "List")
		if err := k8s.client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if strings.HasPrefix(list.Items[i].GetName(), "listener-operator") {
				saved = append(saved, &list.Items[i])
			}
		}
	}
	patchJSON(t, ctx, dep, "merge", map[string]any{"spec": map[string]any{"replicas": 0}})
	eventually(t, ctx, 2*time.Minute, "the operator's pods are gone", func(ctx context.Context) (bool, string) {
		var list corev1.PodList
		if err := k8s.client.List(ctx, &list, client.InNamespace(operatorNamespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods", len(list.Items))
	})
	for _, o := range saved {
		if err := k8s.client.Delete(ctx, o); err != nil {
			t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx := context.WithoutCancel(ctx)
			for _, o := range saved {
				c := o.DeepCopy()
				c.SetResourceVersion("")
				c.SetUID("")
				c.SetManagedFields(nil)
				c.SetCreationTimestamp(metav1.Time{})
				c.SetGeneration(0)
				if err := k8s.client.Create(ctx, c); err != nil && !strings.Contains(err.Error(), "already exists") {
					t.Errorf("restore %s %s: %v", c.GetKind(), c.GetName(), err)
				}
			}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "listener-operator"}}
			patchJSON(t, ctx, d, "merge", map[string]any{"spec": map[string]any{"replicas": replicas}})
			eventually(t, ctx, 3*time.Minute, "the operator is available again", func(ctx context.Context) (bool, string) {
				if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
					return false, err.Error()
				}
				return d.Status.ReadyReplicas == replicas && d.Status.UpdatedReplicas == replicas, fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, replicas)
			})
			webhooksAnswer(t, ctx)
		})
	}
}

// endpointSampler lists a namespace's EndpointSlices until stopped and
// records every sample in which a Service that had endpoints has none.
type endpointSampler struct {
	mu      sync.Mutex
	gaps    []string
	samples int
	done    chan struct{}
	stopped chan struct{}
}

func startEndpointSampler(ctx context.Context, ns string) *endpointSampler {
	s := &endpointSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	seen := map[string]bool{}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var slices discoveryv1.EndpointSliceList
			if err := k8s.client.List(ctx, &slices, client.InNamespace(ns)); err != nil {
				continue
			}
			per := map[string]int{}
			for _, sl := range slices.Items {
				svc := sl.Labels[discoveryv1.LabelServiceName]
				if svc == "" || svc == "kafka" { // the StatefulSet's headless Service is not a Listener's
					continue
				}
				per[svc] += len(sl.Endpoints)
			}
			s.mu.Lock()
			s.samples++
			for svc := range seen {
				if per[svc] == 0 {
					s.gaps = append(s.gaps, fmt.Sprintf("%s: Service %s had no endpoint", time.Now().Format(time.StampMilli), svc))
				}
			}
			for svc, n := range per {
				if n > 0 {
					seen[svc] = true
				}
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *endpointSampler) stop() []string {
	close(s.done)
	<-s.stopped
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gaps
}

func (s *endpointSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}
