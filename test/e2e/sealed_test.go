//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSealedVolumeCapsWhatAPodWrites: every listener volume is a small
// tmpfs of its own, mounted by the node plugin on the pod's node (node 1 is
// the host, node 2 a mount namespace of its own). A pod on each node
// writes 256 MiB and then 100,000 entries into its volume: the writes stop
// at the cap (1 MiB, 1,000 entries), nothing lands on the node's disk, the
// pod still reads its tree, the node plugin does not restart and a
// neighbour pod on the node starts with its own tree. Deleting the pods
// unmounts their volumes.
func TestSealedVolumeCapsWhatAPodWrites(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	nodes := realNodes(t, ctx)[:2]
	ns := namespace(t, ctx, "e2e-sealed")
	restartsBefore := nodePluginRestarts(t, ctx)

	type filler struct {
		name, node, target, mountinfo string
	}
	var fillers []filler
	for i, n := range nodes {
		name := fmt.Sprintf("filler-%d", i+1)
		p := onNode(faultPod(ns, name, e2eClusterIPClass, corev1.RestartPolicyAlways), n.Name)
		if err := k8s.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, filler{name: name, node: n.Name, mountinfo: nodeMountinfo(t, i+1)})
	}
	for i := range fillers {
		f := &fillers[i]
		p := podRunning(t, ctx, ns, f.name, podTimeout)
		pv := boundVolume(t, ctx, ns, f.name+"-listener")
		f.target = filepath.Join(clusterWork(t), "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~csi", pv.Name, "mount")
		m, ok := findMount(t, f.mountinfo, f.target)
		if !ok {
			t.Fatalf("%s (%s): no mount at %s in %s", f.name, f.node, f.target, f.mountinfo)
		}
		for _, want := range []string{"fstype=tmpfs", "source=listeners.stackable.tech", "noexec", "nosuid", "nodev", "size=1024k", "nr_inodes=1000"} {
			if !strings.Contains(m, want) {
				t.Errorf("%s (%s): the volume's mount %q lacks %s", f.name, f.node, m, want)
			}
		}
	}

	for _, f := range fillers {
		address := k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, f.name, "-c", "hello", "--", "cat", treeRoot+"/default-address/address")
		script := `cd ` + treeRoot + `
dd if=/dev/zero of=big bs=1M count=256 2>&1; echo "dd-exit=$?"
i=0; while [ $i -lt 100000 ]; do touch e$i 2>/dev/null || break; i=$((i+1)); done; echo "entries=$i"
echo "used-kib=$(du -sk . | cut -f1)"`
		out, errOut, _ := k8s.run(ctx, "", "exec", "-n", ns, f.name, "-c", "hello", "--", "sh", "-c", script)
		t.Logf("%s on %s: %s%s", f.name, f.node, out, errOut)
		if !strings.Contains(out, "No space left on device") || strings.Contains(out, "dd-exit=0") {
			t.Errorf("%s (%s): writing 256 MiB did not stop at the cap: %s", f.name, f.node, out)
		}
		if n := intAfter(out, "entries="); n < 0 || n >= 1000 {
			t.Errorf("%s (%s): created %d entries, want fewer than the cap of 1,000", f.name, f.node, n)
		}
		if kib := intAfter(out, "used-kib="); kib < 0 || kib > 1024 {
			t.Errorf("%s (%s): the volume holds %d KiB, want at most 1,024", f.name, f.node, kib)
		}
		// The pod still reads its own address from the full volume.
		if got := k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, f.name, "-c", "hello", "--", "cat", treeRoot+"/default-address/address"); got != address {
			t.Errorf("%s (%s): default-address/address = %q after the writes, want %q", f.name, f.node, got, address)
		}

		// A neighbour on the same node starts and reads its tree.
		neighbour := f.name + "-neighbour"
		p := onNode(faultPod(ns, neighbour, e2eClusterIPClass, corev1.RestartPolicyAlways), f.node)
		if err := k8s.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		podRunning(t, ctx, ns, neighbour, podTimeout)
		if a, port := defaultAddress(t, tree(t, ctx, ns, neighbour)); a == "" || port != "8080" {
			t.Errorf("the neighbour on %s reads %s:%s", f.node, a, port)
		}
	}
	if after := nodePluginRestarts(t, ctx); fmt.Sprint(after) != fmt.Sprint(restartsBefore) {
		t.Errorf("node plugin restarts by node went from %v to %v", restartsBefore, after)
	}

	// Unpublish unmounts: no mount is left once the pods are gone.
	for _, f := range fillers {
		if err := k8s.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fillers {
		eventually(t, ctx, 2*time.Minute, f.name+"'s volume unmounted on "+f.node, func(context.Context) (bool, string) {
			m, ok := findMount(t, f.mountinfo, f.target)
			return !ok, m
		})
	}
}

// onNode pins p to a node through the scheduler (node affinity on
// metadata.name): a listener claim binds once the scheduler picked the
// node (WaitForFirstConsumer), which a pod with spec.nodeName skips.
func onNode(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	return p
}

// nodePluginRestarts is the node plugin containers' restart count by node.
func nodePluginRestarts(t *testing.T, ctx context.Context) map[string]int32 {
	t.Helper()
	var plugins corev1.PodList
	if err := k8s.client.List(ctx, &plugins, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "csi-node"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range plugins.Items {
		for _, s := range p.Status.ContainerStatuses {
			out[p.Spec.NodeName] += s.RestartCount
		}
	}
	return out
}

// clusterWork is the local cluster's state directory (.work/cluster),
// next to the kubeconfig the tests use.
func clusterWork(t *testing.T) string {
	t.Helper()
	kc := os.Getenv("E2E_KUBECONFIG")
	if kc == "" {
		t.Skip("E2E_KUBECONFIG is not set: the mount checks need the local cluster of hack/cluster")
	}
	dir, err := filepath.Abs(filepath.Dir(kc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pids")); err != nil {
		t.Skipf("%s is not the state directory of hack/cluster (no pids): the mount checks need the local cluster", dir)
	}
	return dir
}

// nodeMountinfo is the mount table of node i of the local cluster: the
// host's for node 1, its mount namespace's (the holder process) for the
// others.
func nodeMountinfo(t *testing.T, i int) string {
	t.Helper()
	work := clusterWork(t)
	if i == 1 {
		return "/proc/self/mountinfo"
	}
	b, err := os.ReadFile(filepath.Join(work, "pids", fmt.Sprintf("listener-node-%d.mounts", i)))
	if err != nil {
		t.Fatalf("the mount namespace of node %d: %v", i, err)
	}
	return "/proc/" + strings.TrimSpace(string(b)) + "/mountinfo"
}

// findMount describes the mount at target in a mount table ("fstype=…
// source=… <mount options> <filesystem options>").
func findMount(t *testing.T, mountinfo, target string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		t.Fatalf("read %s: %v", mountinfo, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, p := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(p) < 3 || strings.ReplaceAll(f[4], `\040`, " ") != target {
			continue
		}
		return fmt.Sprintf("fstype=%s source=%s %s %s", p[0], p[1], f[5], p[2]), true
	}
	return "", false
}

// intAfter reads the number after key in out; -1 if there is none.
func intAfter(out, key string) int {
	_, rest, ok := strings.Cut(out, key)
	if !ok {
		return -1
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return -1
	}
	return n
}
