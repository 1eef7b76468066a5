package robustness

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"time"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Kubelet does what kwok (kwok.go) cannot for the world's pods: the
// scheduler's part, binding each pod to a node (pods/binding, honouring a
// pinned volume's node affinity), and kubelet's CSI part, calling
// NodePublishVolume for each listener volume of the pod and then
// annotating it published (kwok marks it Running only then:
// hack/kwok/robustness-stages.yaml), and NodeUnpublishVolume before a
// deleted pod goes (the annotation withdrawn: kwok's delete stage waits
// for that, as kubelet unmounts before it removes the pod).
type Kubelet struct {
	// Admin writes bindings and pod status; Node is the in-process CSI
	// node service (its own identity, config/csi/rbac/node_role.yaml).
	Admin client.Client
	Node  csispec.NodeClient
	// Dir holds the published volumes, at kubelet's paths.
	Dir string
	// Bound is how long Sync waits at most for what the cluster is still
	// making (a StatefulSet's pods, a pod's claim, volume and Listener)
	// and for kwok (a published pod Running, an unpublished one gone).
	Bound time.Duration
	// published are the targets published, by pod.
	published map[types.UID]publishedPod
}

// publishedPod is where one pod's volumes are published: by volume name.
type publishedPod struct {
	namespace string
	targets   map[string]string
}

// listenerVolume is one listener volume of a pod: the pod's volume name,
// its claim and the claim's bound PersistentVolume (nil while unbound).
type listenerVolume struct {
	name  string
	claim *corev1.PersistentVolumeClaim
	pv    *corev1.PersistentVolume
}

// syncPoll is how often Sync looks again while the cluster or kwok is
// still at work: a pass is a few List calls, and each operation waits for
// it at least once.
const syncPoll = 25 * time.Millisecond

// Sync does the scheduler's and kubelet's CSI work in namespaces (of
// world w), and waits for kwok's, until nothing is left to do, or only
// what no one here will end (a
// Listener waiting for a load balancer, a class that does not exist):
// those pods stay Pending (ContainerCreating), as on a real node.
func (k *Kubelet) Sync(ctx context.Context, w World, namespaces []string) error {
	deadline := time.Now().Add(k.Bound)
	for {
		progress, waiting, err := k.pass(ctx, w, namespaces)
		if err != nil {
			return err
		}
		if !progress && (!waiting || time.Now().After(deadline)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(syncPoll):
		}
	}
}

// pass does one round over the pods of the world's namespaces: progress
// when it changed something, waiting when something the cluster is making
// is not there yet.
func (k *Kubelet) pass(ctx context.Context, w World, namespaces []string) (progress, waiting bool, err error) {
	for _, ns := range namespaces {
		var pods corev1.PodList
		var sets appsv1.StatefulSetList
		for _, l := range []client.ObjectList{&pods, &sets} {
			if err := k.Admin.List(ctx, l, client.InNamespace(ns)); err != nil {
				return false, false, err
			}
		}
		live := map[types.UID]bool{}
		for _, s := range sets.Items {
			live[s.UID] = true
			if s.Status.ObservedGeneration < s.Generation || s.Spec.Replicas != nil && s.Status.Replicas != *s.Spec.Replicas {
				waiting = true
			}
		}
		for i := range pods.Items {
			p, w, err := k.podPass(ctx, w, &pods.Items[i], live)
			if err != nil {
				return false, false, err
			}
			progress, waiting = progress || p, waiting || w
		}
	}
	return progress, waiting, nil
}

// publishedAnnotation says the suite published a pod's listener volumes
// ("true"; hack/kwok/robustness-stages.yaml: kwok marks the pod Running
// then) or unpublished them after its deletion ("false": kwok removes it).
const publishedAnnotation = "robust.test/published"

// podPass does what the scheduler or kubelet's CSI part does next for
// pod; waiting also while kwok has yet to act on what the suite did.
func (k *Kubelet) podPass(ctx context.Context, w World, pod *corev1.Pod, liveSets map[types.UID]bool) (progress, waiting bool, err error) {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "StatefulSet" && !liveSets[ref.UID] {
		waiting = true // the garbage collector deletes it
	}
	published := pod.Annotations[publishedAnnotation] == "true"
	switch {
	case pod.DeletionTimestamp != nil && published:
		k.unpublish(ctx, pod.UID)
		return true, waiting, ignoreGone(k.annotate(ctx, pod, "false"))
	case pod.DeletionTimestamp != nil:
		return false, true, nil // kwok removes it
	case pod.Spec.NodeName == "":
		node, ok := w.schedule(pod)
		if !ok {
			return false, waiting, nil // unschedulable: pinned to a node that is not the world's
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		return true, waiting, ignoreGone(k.Admin.SubResource("binding").Create(ctx, pod, binding))
	case pod.Status.Phase == corev1.PodPending && published:
		return false, true, nil // kwok marks it Running
	case pod.Status.Phase == corev1.PodPending:
		// A new pod's claim, volume and Listener are being made: worth
		// waiting for. An older pod waits for something no one here may
		// do (a load balancer, a class): it is tried once per pass.
		fresh := time.Since(pod.CreationTimestamp.Time) < k.Bound
		vols, missing, err := k.volumes(ctx, pod)
		if err != nil || missing {
			return false, waiting || fresh, err
		}
		for _, v := range vols {
			if _, err := k.publish(ctx, pod, v); err != nil {
				return false, waiting || fresh, nil
			}
		}
		return true, waiting, ignoreGone(k.annotate(ctx, pod, "true"))
	}
	return false, waiting, nil
}

// annotate sets pod's publishedAnnotation to value.
func (k *Kubelet) annotate(ctx context.Context, pod *corev1.Pod, value string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, publishedAnnotation, value)
	return k.Admin.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted or changed meanwhile: the next pass sees it
	}
	return err
}

// schedule picks pod's node among the world's: one its required node
// affinity names (a pinned volume), else by its name.
func (w World) schedule(pod *corev1.Pod) (string, bool) {
	var nodes []string
	for i := range nodeCount {
		nodes = append(nodes, w.NodeName(i))
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == corev1.LabelHostname || e.Key == v1alpha1.TopologyKeyHostname {
					nodes = slices.DeleteFunc(nodes, func(n string) bool { return !slices.Contains(e.Values, n) })
				}
			}
		}
	}
	if len(nodes) == 0 {
		return "", false
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(pod.Name))
	return nodes[h.Sum32()%uint32(len(nodes))], true
}

// volumes are pod's listener volumes; missing when a claim does not exist
// or is not bound yet (kubelet waits for it).
func (k *Kubelet) volumes(ctx context.Context, pod *corev1.Pod) (vols []listenerVolume, missing bool, err error) {
	for _, vc := range names.PodVolumeClaims(pod) {
		claim := &corev1.PersistentVolumeClaim{}
		if err := k.Admin.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: vc.Claim}, claim); apierrors.IsNotFound(err) {
			return nil, true, nil
		} else if err != nil {
			return nil, false, err
		}
		if _, ok := claims.OfClaim(claim); !ok {
			continue
		}
		if claim.Spec.VolumeName == "" {
			return nil, true, nil
		}
		pv := &corev1.PersistentVolume{}
		if err := k.Admin.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); apierrors.IsNotFound(err) {
			return nil, true, nil
		} else if err != nil {
			return nil, false, err
		}
		vols = append(vols, listenerVolume{name: vc.Volume, claim: claim, pv: pv})
	}
	return vols, false, nil
}

// publish calls NodePublishVolume for v of pod as kubelet does (the
// volume's context, the pod's identity) and returns the target.
func (k *Kubelet) publish(ctx context.Context, pod *corev1.Pod, v listenerVolume) (string, error) {
	if v.pv.Spec.CSI == nil {
		return "", fmt.Errorf("volume %s of claim %s/%s is not a CSI volume", v.pv.Name, v.claim.Namespace, v.claim.Name)
	}
	dir := filepath.Join(k.Dir, "pods", string(pod.UID), "volumes", "kubernetes.io~csi", v.pv.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	target := filepath.Join(dir, "mount")
	vctx := map[string]string{v1alpha1.ContextPodName: pod.Name, v1alpha1.ContextPodNamespace: pod.Namespace, v1alpha1.ContextPodUID: string(pod.UID)}
	for key, val := range v.pv.Spec.CSI.VolumeAttributes {
		vctx[key] = val
	}
	_, err := k.Node.NodePublishVolume(ctx, &csispec.NodePublishVolumeRequest{
		VolumeId: v.pv.Spec.CSI.VolumeHandle, TargetPath: target, VolumeContext: vctx,
		VolumeCapability: &csispec.VolumeCapability{
			AccessType: &csispec.VolumeCapability_Mount{Mount: &csispec.VolumeCapability_MountVolume{}},
			AccessMode: &csispec.VolumeCapability_AccessMode{Mode: csispec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		},
	})
	if err != nil {
		return target, err
	}
	if k.published == nil {
		k.published = map[types.UID]publishedPod{}
	}
	pp, ok := k.published[pod.UID]
	if !ok {
		pp = publishedPod{namespace: pod.Namespace, targets: map[string]string{}}
		k.published[pod.UID] = pp
	}
	pp.targets[v.name] = target
	return target, nil
}

// unpublish calls NodeUnpublishVolume for every volume of the pod.
func (k *Kubelet) unpublish(ctx context.Context, uid types.UID) {
	for _, target := range k.published[uid].targets {
		_, _ = k.Node.NodeUnpublishVolume(ctx, &csispec.NodeUnpublishVolumeRequest{VolumeId: "gone", TargetPath: target})
	}
	delete(k.published, uid)
	_ = os.RemoveAll(filepath.Join(k.Dir, "pods", string(uid)))
}

// forget unpublishes the volumes of the world's pods (its namespaces are
// going).
func (k *Kubelet) forget(ctx context.Context, w World) {
	for uid, pp := range k.published {
		if pp.namespace == w.Tenants[0] || pp.namespace == w.Tenants[1] {
			k.unpublish(ctx, uid)
		}
	}
}

// Observe republishes every listener volume of the snapshot's Running pods
// (kubelet does so every minute: requiresRepublish) and records in s what
// each pod reads from its volume, and why a publish was refused.
func (k *Kubelet) Observe(ctx context.Context, s *Snapshot) error {
	s.Told = map[string]Told{}
	for t := range s.Pods {
		for i := range s.Pods[t] {
			pod := &s.Pods[t][i]
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			vols, _, err := k.volumes(ctx, pod)
			if err != nil {
				return err
			}
			for _, v := range vols {
				target, err := k.publish(ctx, pod, v)
				told := Told{}
				if err != nil {
					told.Refused = err.Error()
				}
				if target != "" {
					if told.Tree, err = readTold(target); err != nil && !errors.Is(err, os.ErrNotExist) {
						return err
					}
				}
				s.Told[toldKey(pod, v.name)] = told
			}
		}
	}
	return nil
}

// toldKey names one listener volume of one pod.
func toldKey(pod *corev1.Pod, volume string) string {
	return pod.Namespace + "/" + pod.Name + "/" + volume
}
