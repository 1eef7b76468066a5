//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cluster's own processes, for the scenarios that stop or restart part
// of the cluster (the fault suite, node loss, the Helm test): the script
// that runs the cluster (hack/cluster/cluster.sh), the pids it records in
// .work/cluster/pids, and waiting for the operator to settle afterwards.

// clusterScript runs hack/cluster/cluster.sh with args from the
// repository's root and returns what it printed. It passes the cluster
// domain the running kubelets were configured with (`make e2e` sets one):
// `up` writes every kubelet's configuration again, and a kubelet restarted
// after an `up` without it would come back in cluster.local.
func clusterScript(ctx context.Context, args ...string) (string, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "cluster", "cluster.sh"), args...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if domain := runningClusterDomain(root); domain != "" {
		cmd.Env = append(cmd.Env, "CLUSTER_DOMAIN="+domain)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cluster.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// runningClusterDomain is the clusterDomain of node 1's kubelet
// configuration (written by cluster.sh up); empty without one.
func runningClusterDomain(root string) string {
	b, err := os.ReadFile(filepath.Join(root, ".work", "cluster", "kubelet.yaml"))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "clusterDomain: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// clusterPid is the pid cluster.sh recorded for one of node 1's processes
// (kube-apiserver, kubelet, ...); 0 when there is none.
func clusterPid(name string) int {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".work", "cluster", "pids", name))
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return p
}

// restartClusterProcess restarts one of the cluster's host processes on
// node 1: SIGTERM to the pid in .work/cluster/pids/<name> (SIGKILL after
// 10 s, as `cluster.sh down` does: a kube-apiserver can hang in its
// shutdown), then `hack/cluster/cluster.sh up`, which starts what is not
// running. Whatever happens later in the test, the process runs again at
// its end.
func restartClusterProcess(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	old := clusterPid(name)
	if old == 0 || !processAlive(old) {
		t.Fatalf(".work/cluster/pids/%s: no running %s (is the cluster started from this tree?)", name, name)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if p := clusterPid(name); p == 0 || !processAlive(p) {
			if _, err := clusterScript(ctx, "up"); err != nil {
				t.Errorf("after stopping %s: %v", name, err)
				return
			}
		}
		operatorSettled(t, ctx)
	})
	if err := syscall.Kill(old, syscall.SIGTERM); err != nil {
		t.Fatalf("stop %s (pid %d): %v", name, old, err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(old); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(old, syscall.SIGKILL)
		}
	}
	if _, err := clusterScript(ctx, "up"); err != nil {
		t.Fatalf("after stopping %s: %v", name, err)
	}
	if p := clusterPid(name); p == old || !processAlive(p) {
		t.Fatalf("%s did not start again (pid %d, was %d)", name, p, old)
	}
}

// operatorSettled waits until every pod of the operator's namespace (but
// finished ones) has been Running and Ready for 15 s. Replicas that lost the API server restart
// (their lease could not be renewed) and may back off for a while; the
// scenarios after a restart need their webhooks.
func operatorSettled(t *testing.T, ctx context.Context) {
	t.Helper()
	var since time.Time
	eventually(t, ctx, 4*time.Minute, "the operator's pods settled", func(context.Context) (bool, string) {
		var pods corev1.PodList
		err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace))
		if err == nil && len(pods.Items) == 0 {
			err = fmt.Errorf("no pods in %s", operatorNamespace)
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; err == nil && p.Status.Phase != corev1.PodSucceeded && (p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !isReady(p)) {
				err = fmt.Errorf("%s %s", p.Name, podState(p))
			}
		}
		if err != nil {
			since = time.Time{}
			return false, err.Error()
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 15*time.Second, "ready since " + since.Format(time.TimeOnly)
	})
}

// processAlive: the process exists and is not a zombie (the cluster's
// processes are re-parented to a pid 1 that may never reap them, so an
// exited one can stay a zombie that kill(pid, 0) still finds).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
