package robustness

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// nodeCount is how many Nodes a world has: two, so that a NodePort pod's
// address depends on where it runs.
const nodeCount = 2

// NodeName is the name of the world's node i.
func (w World) NodeName(i int) string { return fmt.Sprintf("%s-node-%d", w.Prefix, i) }

// nodeIP is node i's InternalIP: per world, so that histories never share
// an address.
func (w World) nodeIP(i int) string {
	var n int
	_, _ = fmt.Sscanf(w.Prefix, "rb%d", &n)
	return fmt.Sprintf("10.49.%d.%d", n%250, i+1)
}

// Node is the world's node i as kubelet registers it: Ready, with an
// InternalIP and its hostname in status and the hostname labels pinned
// volumes' node affinity names; kwok's to manage (kwok.go), which keeps
// its lease and runs its pods.
func (w World) Node(i int) *corev1.Node {
	name := w.NodeName(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{corev1.LabelHostname: name, v1alpha1.TopologyKeyHostname: name},
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: w.nodeIP(i)}, {Type: corev1.NodeHostName, Address: name}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
}

// workloadLabel selects a workload's pods.
const workloadLabel = "robust.test/workload"

// container is the one container of every pod the tenants make: a port
// per op.Ports (the per-claim Listener's ports come from them), the
// listener volume mounted where applications read it.
func container(op Op, mount bool) corev1.Container {
	c := corev1.Container{Name: "app", Image: "pause"}
	for i, p := range op.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: fmt.Sprintf("p%d", i), ContainerPort: p, Protocol: corev1.ProtocolTCP})
	}
	if mount {
		c.VolumeMounts = []corev1.VolumeMount{{Name: v1alpha1.VolumeName, MountPath: v1alpha1.MountPath, ReadOnly: true}}
	}
	return c
}

// Pod is the standalone pod a PutPod makes: its listener volume is an
// existing claim (op.Claim) or a generic ephemeral volume of class op.Class.
func (w World) Pod(op Op) *corev1.Pod {
	vol := corev1.Volume{Name: v1alpha1.VolumeName}
	if op.Claim != "" {
		vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: op.Claim}
	} else {
		claim := w.Claim(Op{Class: op.Class})
		vol.Ephemeral = &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: claim.Annotations}, Spec: claim.Spec,
		}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: op.Name, Namespace: w.Tenants[op.Tenant], Labels: map[string]string{workloadLabel: op.Name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container(op, true)}, Volumes: []corev1.Volume{vol}},
	}
}

// StatefulSet is the StatefulSet a PutStatefulSet makes: opted in by
// v1alpha1.LabelEnabled, of class op.Class (the webhook adds the listener
// claim template and mount), its pods made in parallel (nothing here
// makes them Ready one by one faster).
func (w World) StatefulSet(op Op) *appsv1.StatefulSet {
	sel := map[string]string{workloadLabel: op.Name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: op.Name, Namespace: w.Tenants[op.Tenant],
			Labels:      map[string]string{v1alpha1.LabelEnabled: "true"},
			Annotations: map[string]string{v1alpha1.AnnotationListenerClass: w.ClassName(op.Class)},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(op.Replicas)),
			Selector:            &metav1.LabelSelector{MatchLabels: sel},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{container(op, false)}},
			},
		},
	}
	addBootstrap(sts, op) // share.go
	return sts
}

// putNodeAddress sets (Address "" removes) Node's address annotation.
func putNodeAddress(ctx context.Context, _ *Cluster, actor client.Client, w World, op Op) error {
	node := &corev1.Node{}
	if err := actor.Get(ctx, client.ObjectKey{Name: w.NodeName(op.Node)}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	if op.Address == "" {
		delete(node.Annotations, v1alpha1.AnnotationNodeAddress)
	} else {
		node.Annotations = merged(node.Annotations, v1alpha1.AnnotationNodeAddress, op.Address)
	}
	return actor.Patch(ctx, node, patch)
}

// merged is m with k set to v (m may be nil).
func merged(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// prepareNodes registers the world's nodes as kubelet does: the object
// with its status in one create (the API server keeps a node's status on
// create), so that kwok finds them Ready and leaves their addresses alone
// (its node-initialize stage writes only a node that is not Ready).
func (c *Cluster) prepareNodes(ctx context.Context, w World) error {
	for i := range nodeCount {
		if err := c.Admin.Create(ctx, w.Node(i)); err != nil {
			return fmt.Errorf("prepare world %s: node: %w", w.Prefix, err)
		}
	}
	return nil
}

// cleanupNodes removes the world's pods at once (not waiting for kwok,
// so that the namespaces can go) and its nodes, and unpublishes their
// volumes.
func (c *Cluster) cleanupNodes(ctx context.Context, w World) {
	for _, ns := range w.Tenants {
		_ = c.Admin.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(ns))
	}
	// The StatefulSet controller may still make a pod, and the garbage
	// collector deletes theirs gracefully: until none is left, or a while.
	for range 50 {
		left := 0
		for _, ns := range w.Tenants {
			var pods corev1.PodList
			if err := c.Admin.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				break
			}
			for i := range pods.Items {
				left++
				_ = c.Admin.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
			}
		}
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range nodeCount {
		_ = c.Admin.Delete(ctx, w.Node(i))
	}
	if c.Kubelet != nil {
		c.Kubelet.forget(ctx, w)
	}
}

// runPods lets the kubelet do its work after op (nothing without one):
// in the acting tenant's namespace only after a tenant's operation, so
// that a pod of the other tenant starting then is not taken for the
// operation's doing (TenantStaysInItsNamespace); not at all after the
// operator's restart, which must find nothing changed
// (RestartWritesNothing).
func (c *Cluster) runPods(ctx context.Context, w World, op Op) error {
	switch {
	case c.Kubelet == nil || playbook()[op.Kind].restarts:
		return nil
	case isTenantOp(op.Kind):
		return c.Kubelet.Sync(ctx, w, w.Tenants[op.Tenant:op.Tenant+1])
	}
	return c.Kubelet.Sync(ctx, w, w.Tenants[:])
}

// observePods records in s what each Running pod reads from its volumes.
func (c *Cluster) observePods(ctx context.Context, s *Snapshot) error {
	if c.Kubelet == nil {
		return nil
	}
	return c.Kubelet.Observe(ctx, s)
}
