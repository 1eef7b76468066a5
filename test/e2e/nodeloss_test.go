//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Node loss (docs/nodeloss.md): a replica pinned to a node that is stopped
// and whose Node is deleted.

const (
	nlReleaseClass = "e2e-nodeloss-release" // pinned, default policy (release when the Node is deleted)
	nlNeverClass   = "e2e-nodeloss-never"   // pinned, release: Never
	// nlRecoverTimeout bounds node deletion → replica Running elsewhere: the
	// pod garbage collector's 40 s quarantine for pods of deleted nodes,
	// the release, a new pod, provisioning and publishing.
	nlRecoverTimeout = 4 * time.Minute
)

// TestNodeLossReleasesPinnedReplica: two StatefulSets, one per policy, each
// with a listener volume pinned to the last real node B and a data volume.
// Node B's processes are stopped and its Node deleted. The default-policy
// replica runs on another node with the new node's address in its tree, its
// PodListeners and its Listener's status, under the same Listener and node
// port, and its data claim is untouched. The Never replica stays Pending;
// the operator's event on its claim says how to release it, and running
// that command releases it.
//
// Not parallel: it stops a node. It starts node B again afterwards.
func TestNodeLossReleasesPinnedReplica(t *testing.T) {
	ctx := t.Context()
	nodes := nlRealNodes(t, ctx)
	b := nodes[len(nodes)-1] // never the first: listener-node-1 is the host and carries the API server
	for _, c := range []struct {
		name    string
		release v1alpha1.PinnedNodeRelease
	}{{nlReleaseClass, ""}, {nlNeverClass, v1alpha1.PinnedNodeReleaseNever}} {
		spec := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true), PreferredAddressType: v1alpha1.PreferredAddressIP}
		if c.release != "" {
			spec.PinnedNodeLoss = &v1alpha1.PinnedNodeLoss{Release: c.release}
		}
		ensureClass(t, ctx, listenerClass(c.name, spec))
	}
	ns := namespace(t, ctx, "e2e-nodeloss")

	// Land both replicas on B: every other node cordoned meanwhile.
	others := nlOtherNodes(nodes, b.Name)
	nlCordon(t, ctx, others, true)
	t.Cleanup(func() { nlCordon(t, context.WithoutCancel(ctx), others, false) })
	for _, s := range []struct{ name, class string }{{"rel", nlReleaseClass}, {"keep", nlNeverClass}} {
		nlDataVolume(t, ctx, ns, "data-"+s.name+"-0")
		sts := demoStatefulSet(ns, s.name, s.class, 1)
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, nlDataTemplate())
		sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		if err := k8s.client.Create(ctx, sts); err != nil {
			t.Fatalf("create StatefulSet %s: %v", s.name, err)
		}
	}
	rel := podsReady(t, ctx, ns, "rel", 1, podTimeout)["rel-0"]
	keep := podsReady(t, ctx, ns, "keep", 1, podTimeout)["keep-0"]
	for _, p := range []*corev1.Pod{rel, keep} {
		if p.Spec.NodeName != b.Name {
			t.Fatalf("%s runs on %s, want %s (the others were cordoned)", p.Name, p.Spec.NodeName, b.Name)
		}
	}
	nlCordon(t, ctx, others, false)
	bIP := nodeAddressOf(t, &b)
	addr, port := defaultAddress(t, tree(t, ctx, ns, "rel-0"))
	if addr != bIP {
		t.Fatalf("rel-0 reads %s, want node %s's %s", addr, b.Name, bIP)
	}
	relListener := listener(t, ctx, ns, "rel-0")
	keepListener := listener(t, ctx, ns, "keep-0")
	relClaim, keepClaim, dataClaim := nlClaim(t, ctx, ns, "listener-rel-0"), nlClaim(t, ctx, ns, "listener-keep-0"), nlClaim(t, ctx, ns, "data-rel-0")

	// The operator's own pods must not go down with B.
	nlMoveOperatorOff(t, ctx, b.Name)

	// B goes away for good: its processes stop, its Node is deleted.
	nlClusterSh(t, ctx, "stop-node", b.Name)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		nlClusterSh(t, ctx, "start-node", b.Name)
		nlNodeReachable(t, ctx, b.Name)
	})
	if err := k8s.client.Delete(ctx, &b); err != nil {
		t.Fatalf("delete node %s: %v", b.Name, err)
	}
	lost := time.Now()

	// The default policy: the replica runs elsewhere.
	p := runningPodAgain(t, ctx, ns, "rel-0", rel.UID, nlRecoverTimeout)
	t.Logf("rel-0 Running and Ready on %s %s after node %s was deleted", p.Spec.NodeName, time.Since(lost).Round(time.Second), b.Name)
	newNode := &corev1.Node{}
	if err := k8s.client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, newNode); err != nil {
		t.Fatal(err)
	}
	newIP := nodeAddressOf(t, newNode)
	eventually(t, ctx, 2*time.Minute, "rel-0's tree shows the new node's address", func(ctx context.Context) (bool, string) {
		files := tree(t, ctx, ns, "rel-0")
		return files["default-address/address"] == newIP && files["default-address/ports/http"] == port, fmt.Sprint(files)
	})
	eventually(t, ctx, time.Minute, "Listener status shows only the new node", func(ctx context.Context) (bool, string) {
		l := &v1alpha1.Listener{}
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: relListener.Name}, l); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, in := range l.Status.IngressAddresses {
			got = append(got, in.Address+":"+strconv.Itoa(int(in.Ports["http"])))
		}
		sort.Strings(got)
		return l.UID == relListener.UID && slices.Equal(got, []string{newIP + ":" + port}),
			fmt.Sprintf("uid %s (was %s), status.ingressAddresses %v", l.UID, relListener.UID, got)
	})
	if got := nlPodListeners(t, ctx, p); !slices.Equal(got, []string{newIP + ":" + port}) {
		t.Errorf("PodListeners of rel-0 record %v, want [%s:%s]", got, newIP, port)
	}
	answers(t, ctx, newIP, port, "rel-0")
	if c := nlClaim(t, ctx, ns, "listener-rel-0"); c.UID == relClaim.UID {
		t.Errorf("listener claim of rel-0 was not recreated")
	}
	if c := nlClaim(t, ctx, ns, "data-rel-0"); c.UID != dataClaim.UID || c.DeletionTimestamp != nil {
		t.Errorf("data claim of rel-0 uid %s (was %s), deleting %v: want it untouched", c.UID, dataClaim.UID, c.DeletionTimestamp)
	}
	nlEvent(t, ctx, ns, relClaim.UID, "Released", b.Name+", which no longer exists")

	// Never: Pending, and the claim's event says how to release it.
	command := fmt.Sprintf("kubectl annotate pvc -n %s listener-keep-0 listeners.stackable.tech/release-pinned-node=%s", ns, b.Name)
	nlEvent(t, ctx, ns, keepClaim.UID, "NodeLost", command)
	// Its replacement (once the pod garbage collector removed the pod of
	// the deleted node) stays Pending.
	kp := &corev1.Pod{}
	eventually(t, ctx, nlRecoverTimeout, "keep-0 recreated and Pending", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep-0"}, kp); err != nil {
			return false, err.Error()
		}
		return kp.UID != keep.UID && kp.Spec.NodeName == "" && kp.Status.Phase == corev1.PodPending,
			fmt.Sprintf("%s on %q (uid %s, old %s)", podState(kp), kp.Spec.NodeName, kp.UID, keep.UID)
	})
	if c := nlClaim(t, ctx, ns, "listener-keep-0"); c.UID != keepClaim.UID || c.DeletionTimestamp != nil {
		t.Errorf("the Never claim was released (uid %s, was %s; deleting %v)", c.UID, keepClaim.UID, c.DeletionTimestamp)
	}
	nlEvent(t, ctx, ns, kp.UID, "NodeLost", command)
	// The command from the event, as a user would type it.
	args := strings.Fields(strings.TrimPrefix(command, "kubectl "))
	k8s.kubectlOK(t, ctx, "", args...)
	kp2 := runningPodAgain(t, ctx, ns, "keep-0", kp.UID, nlRecoverTimeout)
	kaddr, kport := defaultAddress(t, tree(t, ctx, ns, "keep-0"))
	if l := listener(t, ctx, ns, "keep-0"); l.UID != keepListener.UID {
		t.Errorf("keep-0's Listener was recreated")
	}
	t.Logf("keep-0 Running on %s at %s:%s after the annotation", kp2.Spec.NodeName, kaddr, kport)
}

// nlRealNodes are the Ready nodes that run kubelet, the host's node first;
// the test needs two.
func nlRealNodes(t *testing.T, ctx context.Context) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := k8s.client.List(ctx, &list); err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if n.Annotations["kwok.x-k8s.io/node"] != "" {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) < 2 {
		t.Fatalf("node loss needs 2 Ready nodes, the cluster has %d: run `make e2e` or `NODES=2 make cluster-up`", len(out))
	}
	return out
}

func nlOtherNodes(nodes []corev1.Node, except string) []string {
	var out []string
	for _, n := range nodes {
		if n.Name != except {
			out = append(out, n.Name)
		}
	}
	return out
}

func nodeAddressOf(t *testing.T, n *corev1.Node) string {
	t.Helper()
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("node %s has no InternalIP: %v", n.Name, n.Status.Addresses)
	return ""
}

func nlCordon(t *testing.T, ctx context.Context, nodes []string, on bool) {
	t.Helper()
	verb := "uncordon"
	if on {
		verb = "cordon"
	}
	for _, n := range nodes {
		if _, errOut, err := k8s.run(ctx, "", verb, n); err != nil && !strings.Contains(errOut, "NotFound") {
			t.Errorf("kubectl %s %s: %v: %s", verb, n, err, errOut)
		}
	}
}

// nlNodeReachable waits until the API server has reached node's kubelet
// (GET nodes/<node>/proxy/healthz, the path kubectl exec and logs take) 10
// times in a row, so that the tests after this one find a node that is
// back, not one still settling: once, right after a restart, the host and
// the node's namespace did not reach each other for about a minute.
func nlNodeReachable(t *testing.T, ctx context.Context, node string) {
	t.Helper()
	ok := 0
	eventually(t, ctx, 4*time.Minute, "the API server reaches the kubelet of "+node, func(ctx context.Context) (bool, string) {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, stderr, err := k8s.run(tctx, "", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz")
		if err != nil || strings.TrimSpace(out) != "ok" {
			ok = 0
			return false, fmt.Sprintf("%q %s %v", out, stderr, err)
		}
		ok++
		return ok >= 10, fmt.Sprintf("%d answers in a row", ok)
	})
}

// nlClusterSh runs hack/cluster/cluster.sh with args (stop-node/start-node).
func nlClusterSh(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	if _, err := clusterScript(ctx, args...); err != nil {
		t.Fatal(err)
	}
}

// nlMoveOperatorOff moves the operator's and the CSI controller's pods
// (not the per-node DaemonSet pods) off node and waits until they run
// elsewhere, so that stopping the node tests recovery, not the operator's
// own failover.
func nlMoveOperatorOff(t *testing.T, ctx context.Context, node string) {
	t.Helper()
	nlCordon(t, ctx, []string{node}, true)
	t.Cleanup(func() { nlCordon(t, context.WithoutCancel(ctx), []string{node}, false) })
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOf(p); p.Spec.NodeName == node && (ref == nil || ref.Kind != "DaemonSet") {
			if err := k8s.client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("delete operator pod %s: %v", p.Name, err)
			}
		}
	}
	eventually(t, ctx, 2*time.Minute, "operator Deployments available off "+node, func(ctx context.Context) (bool, string) {
		var deps appsv1.DeploymentList
		if err := k8s.client.List(ctx, &deps, client.InNamespace(operatorNamespace)); err != nil {
			return false, err.Error()
		}
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
			return false, err.Error()
		}
		for _, d := range deps.Items {
			if d.Status.ReadyReplicas < ptr.Deref(d.Spec.Replicas, 1) || d.Status.UpdatedReplicas < ptr.Deref(d.Spec.Replicas, 1) {
				return false, fmt.Sprintf("%s: %d/%d ready", d.Name, d.Status.ReadyReplicas, ptr.Deref(d.Spec.Replicas, 1))
			}
		}
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); p.Spec.NodeName == node && (ref == nil || ref.Kind != "DaemonSet") {
				return false, "pod " + p.Name + " still on " + node
			}
		}
		return true, ""
	})
}

// nlDataTemplate is a data volume claim template that binds to a volume
// made by hand (nlDataVolume): not a listener claim.
func nlDataTemplate() corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(""), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
	}}
}

// nlDataVolume is a hostPath volume reserved for the claim ns/claim (an
// emptyDir-like scratch directory that any node can mount).
func nlDataVolume(t *testing.T, ctx context.Context, ns, claim string) {
	t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		StorageClassName:              "",
		ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: "/tmp/listener-e2e-" + ns + "-" + claim, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
	}}
	if err := k8s.client.Create(ctx, pv); err != nil {
		t.Fatalf("create data volume: %v", err)
	}
	t.Cleanup(func() { _ = k8s.client.Delete(context.WithoutCancel(ctx), pv) })
}

func nlClaim(t *testing.T, ctx context.Context, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c := &corev1.PersistentVolumeClaim{}
	eventually(t, ctx, time.Minute, "claim "+name, func(ctx context.Context) (bool, string) {
		err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)
		return err == nil, fmt.Sprint(err)
	})
	return c
}

// runningPodAgain waits for a Running, Ready pod of that name other than old.
func runningPodAgain(t *testing.T, ctx context.Context, ns, name string, old types.UID, timeout time.Duration) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	eventually(t, ctx, timeout, fmt.Sprintf("pod %s/%s Running again", ns, name), func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err.Error()
		}
		return p.UID != old && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(p),
			fmt.Sprintf("%s on %q (uid %s)", podState(p), p.Spec.NodeName, p.UID)
	})
	return p
}

// nlPodListeners is what the pod's PodListeners records, as address:http-port.
func nlPodListeners(t *testing.T, ctx context.Context, pod *corev1.Pod) []string {
	t.Helper()
	var pl v1alpha1.PodListeners
	var out []string
	eventually(t, ctx, time.Minute, "PodListeners of "+pod.Name, func(ctx context.Context) (bool, string) {
		err := k8s.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v1alpha1.PodListenersNamePrefix + string(pod.UID)}, &pl)
		return err == nil, fmt.Sprint(err)
	})
	for _, l := range pl.Spec.Listeners {
		for _, in := range l.IngressAddresses {
			out = append(out, in.Address+":"+strconv.Itoa(int(in.Ports["http"])))
		}
	}
	sort.Strings(out)
	return out
}

// nlEvent waits for an event of reason regarding uid whose note says say.
func nlEvent(t *testing.T, ctx context.Context, ns string, uid types.UID, reason, say string) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, fmt.Sprintf("%s event saying %q", reason, say), func(ctx context.Context) (bool, string) {
		var list eventsv1.EventList
		if err := k8s.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.UID == uid && e.Reason == reason {
				if strings.Contains(e.Note, say) {
					return true, ""
				}
				notes = append(notes, e.Note)
			}
		}
		return false, fmt.Sprintf("%s events: %q", reason, notes)
	})
}
