//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The Helm test installs the chart the way docs/install.md tells a user,
// into a namespace that is not listener-operator. Cluster-wide names
// (CRDs, ClusterRoles, webhook configurations, the CSIDriver) clash with the
// kustomize install `make e2e` deploys, so the test removes that install
// first and restores it afterwards (hack/cluster/cluster.sh undeploy/deploy).
const (
	helmRelease   = "lo"
	helmNamespace = "platform-e2e"
)

var (
	repoRoot     = filepath.Join("..", "..")
	helmBinary   = filepath.Join(repoRoot, "bin", "tools", "helm")
	helmChart    = filepath.Join(repoRoot, "deploy", "helm", "listener-operator")
	listenerCRDs = []string{"listenerclasses.listeners.stackable.tech", "listeners.listeners.stackable.tech", "podlisteners.listeners.stackable.tech"}
)

// helmCmd runs helm against the test cluster.
func helmCmd(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, helmBinary, append([]string{"--kubeconfig", k8s.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// localImages are the only values the test sets for the install itself:
// nothing can be pulled here, so the sidecars are the ones the cluster
// imported, and kubelet keeps its state under .work/cluster.
func localImages(t *testing.T) []string {
	kubelet, err := filepath.Abs(filepath.Join(repoRoot, ".work", "cluster", "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		"--set", "csiProvisioner.externalProvisioner.image.repository=localhost/csi-provisioner",
		"--set", "csiProvisioner.externalProvisioner.image.tag=v6.3.0",
		"--set", "csiNodeDriver.nodeDriverRegistrar.image.repository=localhost/csi-node-driver-registrar",
		"--set", "csiNodeDriver.nodeDriverRegistrar.image.tag=dev",
		"--set", "kubeletDir=" + kubelet,
		// No cluster DNS here: the helm test's claim uses a NodePort class.
		"--set", "tests.listenerClass=external-unstable",
	}
}

func TestHelmInstallUpgradeUninstall(t *testing.T) {
	ctx := t.Context()
	if _, err := exec.LookPath(helmBinary); err != nil {
		t.Fatalf("helm is not built: run `make deploy-tools`: %v", err)
	}
	// Replace the kustomize install; put it back whatever happens.
	if _, err := clusterScript(ctx, "undeploy"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if out, err := helmCmd(ctx, "uninstall", helmRelease, "-n", helmNamespace, "--ignore-not-found", "--wait"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		_, _, _ = k8s.run(ctx, "", "delete", "namespace", helmNamespace, "--ignore-not-found", "--wait=true", "--timeout=120s")
		if _, err := clusterScript(ctx, "deploy"); err != nil {
			t.Errorf("restoring the kustomize install: %v", err)
			return
		}
		webhooksAnswer(t, ctx)
	})
	k8s.kubectlOK(t, ctx, "", append([]string{"wait", "--for=delete", "--timeout=180s", "namespace/" + operatorNamespace}, prefixed("crd/", listenerCRDs)...)...)

	// Install as docs/install.md says: a namespace that allows the node
	// plugin's privileged pods, then the chart with its defaults.
	k8s.kubectlOK(t, ctx, "", "create", "namespace", helmNamespace)
	k8s.kubectlOK(t, ctx, "", "label", "namespace", helmNamespace, "pod-security.kubernetes.io/enforce=privileged")
	install := append([]string{"install", helmRelease, helmChart, "-n", helmNamespace, "--set", "preset=stable-nodes", "--set", "monitoring.dashboard.enabled=true", "--wait", "--timeout=4m"}, localImages(t)...)
	if out, err := helmCmd(ctx, install...); err != nil {
		k8s.run(ctx, "", "get", "pods", "-n", helmNamespace, "-o", "wide")
		t.Fatalf("helm install: %v\n%s", err, out)
	} else if !strings.Contains(out, "kubectl -n "+helmNamespace+" get pods") {
		t.Errorf("NOTES.txt does not tell how to check the install:\n%s", out)
	}
	eventually(t, ctx, 2*time.Minute, "the preset ListenerClasses", func(ctx context.Context) (bool, string) {
		out, errOut, err := k8s.run(ctx, "", "get", "listenerclass", "cluster-internal", "-o", "name")
		return err == nil, out + errOut
	})

	t.Run("demo workload", func(t *testing.T) {
		ns := namespace(t, ctx, "e2e-helm")
		if err := k8s.client.Create(ctx, demoStatefulSet(ns, "hello", "cluster-internal", 1)); err != nil {
			t.Fatalf("create StatefulSet: %v", err)
		}
		podsReady(t, ctx, ns, "hello", 1, podTimeout)
		addr, port := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
		if want := "." + ns + ".svc." + kubeletClusterDomain(t, ctx); !strings.HasSuffix(addr, want) || port != "8080" {
			t.Errorf("hello-0 reads %s:%s, want its Service's DNS name (*%s) and 8080", addr, port, want)
		}
		// Gone before the uninstall: kubelet needs the node plugin to
		// unpublish the pod's volume.
		k8s.kubectlOK(t, ctx, "", "delete", "namespace", ns, "--wait=true", "--timeout=120s")
	})
	badClaim := func(t *testing.T) {
		t.Helper()
		ns := namespace(t, ctx, "e2e-helm-bad")
		_, errOut, err := k8s.run(ctx, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: web
  annotations: {listeners.stackable.tech/listener-class: no-such-class}
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1}}
`, "apply", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(errOut, `ListenerClass "no-such-class" not found; available:`) {
			t.Errorf("kubectl apply of a claim with an unknown class: err %v, stderr %q; want the webhook's refusal", err, errOut)
		}
	}
	t.Run("bad claim refused", badClaim)

	// --- chart-ops: helm test, monitoring ---------------------------------
	t.Run("helm test", func(t *testing.T) { helmTest(t, ctx, helmRelease, "listener-operator") })
	t.Run("monitoring", func(t *testing.T) {
		cm := k8s.kubectlOK(t, ctx, "", "get", "configmap", "-n", helmNamespace, "-l", "grafana_dashboard=1", "-o", "name")
		if strings.TrimSpace(cm) != "configmap/listener-operator-dashboard" {
			t.Errorf("dashboard ConfigMaps with the sidecar label: %q", cm)
		}
		addr := checkDashboardQueries(t, ctx, helmNamespace)
		screenshot(t, ctx, addr, helmNamespace, filepath.Join(repoRoot, "bin", "prometheus-graph.png"))
	})
	// --- end chart-ops ----------------------------------------------------

	t.Run("upgrade with changed values", func(t *testing.T) {
		upgrade := append([]string{"upgrade", helmRelease, helmChart, "-n", helmNamespace, "--set", "preset=stable-nodes",
			"--set", "operator.replicas=1", "--set", "logging.level=debug", "--set", "webhook.timeoutSeconds=5",
			"--set", "labels.team=platform", "--wait", "--timeout=4m"}, localImages(t)...)
		if out, err := helmCmd(ctx, upgrade...); err != nil {
			t.Fatalf("helm upgrade: %v\n%s", err, out)
		}
		out := k8s.kubectlOK(t, ctx, "", "get", "deployment", "-n", helmNamespace, "listener-operator", "-o",
			`jsonpath={.spec.replicas} {.metadata.labels.team} {.spec.template.spec.containers[0].args}`)
		if !strings.HasPrefix(out, "1 platform ") || !strings.Contains(out, "--zap-log-level=debug") {
			t.Errorf("operator Deployment after the upgrade: %s; want 1 replica, label team=platform, --zap-log-level=debug", out)
		}
		for _, wc := range []string{"mutatingwebhookconfiguration/listener-operator-mutating", "validatingwebhookconfiguration/listener-operator-validating"} {
			got := strings.Fields(k8s.kubectlOK(t, ctx, "", "get", wc, "-o", "jsonpath={.webhooks[*].timeoutSeconds}"))
			if len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "5" }) {
				t.Errorf("%s timeouts after the upgrade: %v, want 5 for every webhook", wc, got)
			}
		}
		badClaim(t)
	})

	t.Run("uninstall leaves only CRDs and listener objects", func(t *testing.T) {
		if out, err := helmCmd(ctx, "uninstall", helmRelease, "-n", helmNamespace, "--wait"); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		kinds := "deployments,daemonsets,services,serviceaccounts,secrets,roles,rolebindings,poddisruptionbudgets,clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings,csidrivers,storageclasses"
		out := k8s.kubectlOK(t, ctx, "", "get", kinds, "-A", "-l", "app.kubernetes.io/instance="+helmRelease, "-o", "name")
		if strings.TrimSpace(out) != "" {
			t.Errorf("helm uninstall left:\n%s", out)
		}
		for _, crd := range listenerCRDs {
			k8s.kubectlOK(t, ctx, "", "get", "crd", crd)
		}
		var classes v1alpha1.ListenerClassList
		if err := k8s.client.List(ctx, &classes); err != nil || len(classes.Items) == 0 {
			t.Errorf("ListenerClasses after uninstall: %d, %v; documented to stay", len(classes.Items), err)
		}
		releasePodsGone(t, ctx)
	})

	// --- chart-ops: the existing chart's values files ---------------------
	t.Run("their values", func(t *testing.T) {
		for _, c := range []struct {
			file string
			// The images their file names, from the ones the cluster imported.
			images map[string]string
		}{
			{"stackable-d8f9cf3-values.yaml", map[string]string{
				"registry.k8s.io/sig-storage/csi-provisioner:v5.3.0":            "localhost/csi-provisioner:v6.3.0",
				"registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0": "localhost/csi-node-driver-registrar:dev",
			}},
			{"stackable-25.7.0-values.yaml", map[string]string{
				"oci.stackable.tech/sdp/sig-storage/csi-provisioner:v5.2.0":            "localhost/csi-provisioner:v6.3.0",
				"oci.stackable.tech/sdp/sig-storage/csi-node-driver-registrar:v2.13.0": "localhost/csi-node-driver-registrar:dev",
			}},
		} {
			t.Run(c.file, func(t *testing.T) {
				for dst, src := range c.images {
					if _, err := clusterScript(ctx, "tag-image", src, dst); err != nil {
						t.Fatal(err)
					}
				}
				// Whatever happens, the next file starts from no release.
				t.Cleanup(func() {
					ctx := context.WithoutCancel(ctx)
					_, _, _ = k8s.run(ctx, "", "delete", "namespace", "listener-operator-test", "--ignore-not-found", "--wait=true", "--timeout=120s")
					_, _ = helmCmd(ctx, "uninstall", helmRelease, "-n", helmNamespace, "--ignore-not-found", "--wait")
				})
				kubelet, _ := filepath.Abs(filepath.Join(repoRoot, ".work", "cluster", "kubelet"))
				// Their file as it is; only what is this cluster's, not the
				// chart's: kubelet's directory, and no cluster DNS.
				out, err := helmCmd(ctx, "install", helmRelease, helmChart, "-n", helmNamespace, "-f", filepath.Join(repoRoot, "deploy", "testdata", c.file),
					"--set", "kubeletDir="+kubelet, "--set", "tests.listenerClass=external-unstable", "--wait", "--timeout=4m")
				if err != nil {
					k8s.run(ctx, "", "get", "pods", "-n", helmNamespace, "-o", "wide")
					t.Fatalf("helm install -f %s: %v\n%s", c.file, err, out)
				}
				if strings.Contains(c.file, "d8f9cf3") && !strings.Contains(out, "maintenance.customResourceDefinitions.maintain=true is ignored") {
					t.Errorf("NOTES do not say that maintenance.customResourceDefinitions.maintain is ignored:\n%s", out)
				}
				// --wait saw every Deployment and DaemonSet ready; check the
				// pods run the images their file names.
				images := k8s.kubectlOK(t, ctx, "", "get", "pods", "-n", helmNamespace, "-o", `jsonpath={range .items[*]}{.status.phase} {range .spec.containers[*]}{.image} {end}{"\n"}{end}`)
				for dst := range c.images {
					if !strings.Contains(images, dst) {
						t.Errorf("no pod runs %s:\n%s", dst, images)
					}
				}
				for _, line := range strings.Split(strings.TrimSpace(images), "\n") {
					if !strings.HasPrefix(line, "Running ") {
						t.Errorf("pod not running: %s", line)
					}
				}
				helmTest(t, ctx, helmRelease, "listener-operator")
				if out, err := helmCmd(ctx, "uninstall", helmRelease, "-n", helmNamespace, "--wait"); err != nil {
					t.Fatalf("helm uninstall: %v\n%s", err, out)
				}
				releasePodsGone(t, ctx)
			})
		}
	})
	// --- end chart-ops ----------------------------------------------------
}

// releasePodsGone waits until the release's namespace has no pod left.
func releasePodsGone(t *testing.T, ctx context.Context) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "the release's pods gone", func(ctx context.Context) (bool, string) {
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(helmNamespace)); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return len(names) == 0, fmt.Sprint(names)
	})
}

// helmTest runs `helm test` on a release and checks that its pod read the
// listener volume and reached itself at the address there.
func helmTest(t *testing.T, ctx context.Context, release, fullname string) {
	t.Helper()
	testNS := fullname + "-test"
	out, err := helmCmd(ctx, "test", release, "-n", helmNamespace, "--timeout=4m")
	if err != nil {
		var diag strings.Builder
		for _, args := range [][]string{
			{"logs", "-n", testNS, "listener-check"},
			{"get", "pods,pvc,listeners", "-n", testNS, "-o", "wide"},
			{"get", "events", "-n", testNS},
			{"get", "pods", "-n", helmNamespace, "-o", "wide"},
			{"logs", "-n", helmNamespace, "deploy/listener-operator-csi-controller", "--all-containers", "--tail=20"},
		} {
			o, e, _ := k8s.run(ctx, "", args...)
			fmt.Fprintf(&diag, "$ kubectl %s\n%s%s\n", strings.Join(args, " "), o, e)
		}
		t.Fatalf("helm test: %v\n%s\n%s", err, out, diag.String())
	}
	if !strings.Contains(out, "listener-check") || !strings.Contains(out, "Succeeded") {
		t.Errorf("helm test output does not report listener-check Succeeded:\n%s", out)
	}
	// Passed: its namespace is gone with the claim and the Listener.
	eventually(t, ctx, 2*time.Minute, "the test namespace gone", func(ctx context.Context) (bool, string) {
		o, e, err := k8s.run(ctx, "", "get", "namespace", testNS, "--ignore-not-found", "-o", "name")
		return err == nil && strings.TrimSpace(o) == "", o + e
	})
}

func prefixed(prefix string, names []string) []string {
	out := slices.Clone(names)
	for i := range out {
		out[i] = prefix + out[i]
	}
	return out
}
