//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The chart's dashboard against real metrics: Prometheus from Debian's
// package (make monitoring-tools) scrapes the Helm release's components
// (every pod port named metrics, labelled namespace and pod as a
// ServiceMonitor would; Debian builds Prometheus without Kubernetes service
// discovery, so the test lists the pods) and the API server (its admission
// metrics), and
// every query of the dashboard must return a series. The metrics may be
// served over HTTPS with Kubernetes authentication and authorization
// (a bearer token that may get /metrics): the scrape sends a token of a
// service account allowed to, and follows the scheme the pods answer with.

// dashboardQueries returns the PromQL of every panel of the chart's
// dashboard, its $namespace variable set to ns.
func dashboardQueries(t *testing.T, ns string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "helm", "listener-operator", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, strings.ReplaceAll(tg.Expr, "$namespace", ns))
		}
	}
	return out
}

// scraperToken makes a service account that may get /metrics (what the
// kube-rbac-proxy style authorization of the metrics endpoints and the API
// server ask for) and returns a token of it.
func scraperToken(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	k8s.kubectlOK(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: e2e-prometheus, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-prometheus}
rules:
- nonResourceURLs: ["/metrics"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-prometheus}
subjects:
- {kind: ServiceAccount, name: e2e-prometheus, namespace: %[1]s}
`, ns), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _, _ = k8s.run(context.WithoutCancel(ctx), "", "delete", "clusterrolebinding,clusterrole", "e2e-prometheus", "--ignore-not-found")
	})
	return strings.TrimSpace(k8s.kubectlOK(t, ctx, "", "create", "token", "e2e-prometheus", "-n", ns, "--duration=1h"))
}

// metricsScheme says whether a metrics endpoint (host:port) answers plain
// HTTP or HTTPS (a TLS server answers a plain request with 400).
func metricsScheme(t *testing.T, ctx context.Context, target string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/metrics", nil)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET the metrics at %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("HTTPS")) {
		return "https"
	}
	return "http"
}

// prometheus runs Debian's Prometheus against the cluster and returns its
// address; it stops with the test.
func prometheus(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed and could not be (make monitoring-tools installs Debian's prometheus package)")
	}
	dir := t.TempDir()
	token := scraperToken(t, ctx, ns)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var targets strings.Builder
	var first string
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.Name == "metrics" && p.Status.PodIP != "" {
					target := net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port.ContainerPort))
					fmt.Fprintf(&targets, "  - {targets: [%q], labels: {namespace: %q, pod: %q}}\n", target, ns, p.Name)
					if first == "" {
						first = target
					}
				}
			}
		}
	}
	if first == "" {
		t.Fatalf("no pod in %s has a port named metrics", ns)
	}
	server := strings.TrimSpace(k8s.kubectlOK(t, ctx, "", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
scrape_configs:
- job_name: listener-operator
  scheme: %[1]s
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %[2]s/token}
  static_configs:
%[3]s- job_name: apiserver
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %[2]s/token}
  static_configs: [{targets: ["%[4]s"]}]
`, metricsScheme(t, ctx, first), dir, targets.String(), u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	return addr
}

// promQuery runs an instant query and returns how many series it gave.
func promQuery(ctx context.Context, addr, query string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/query?query="+url.QueryEscape(query), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", query, r.Error)
	}
	return len(r.Data.Result), nil
}

// checkDashboardQueries waits until every dashboard query returns a series
// from the release in ns (pods were created, admitted and published
// before, so every metric the dashboard reads has been written).
func checkDashboardQueries(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	addr := prometheus(t, ctx, ns)
	queries := dashboardQueries(t, ns)
	// The targets: every component of the release, and the API server.
	eventually(t, ctx, 2*time.Minute, "Prometheus scraping the operator, the CSI controller, the CSI node plugins and the API server", func(ctx context.Context) (bool, string) {
		var missing []string
		for _, q := range []string{
			`up{job="listener-operator",pod=~".*-csi-node-.*"} == 1`,
			`up{job="listener-operator",pod=~".*-csi-controller-.*"} == 1`,
			`up{job="listener-operator",pod!~".*-csi-.*"} == 1`,
			`up{job="apiserver"} == 1`,
		} {
			if n, err := promQuery(ctx, addr, q); err != nil || n == 0 {
				missing = append(missing, fmt.Sprintf("%s (%v)", q, err))
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	eventually(t, ctx, 2*time.Minute, "a series for every dashboard query", func(ctx context.Context) (bool, string) {
		var empty []string
		for _, q := range queries {
			if n, err := promQuery(ctx, addr, q); err != nil || n == 0 {
				empty = append(empty, fmt.Sprintf("%s (%d series, %v)", q, n, err))
			}
		}
		return len(empty) == 0, strings.Join(empty, "\n")
	})
	t.Logf("all %d dashboard queries return series", len(queries))
	return addr
}

// screenshot saves Prometheus's graph page with a few of the dashboard's
// queries as a PNG (headless Chromium from Debian's package), the picture
// in docs/monitoring.md.
func screenshot(t *testing.T, ctx context.Context, addr, ns, out string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed and could not be (CHROMIUM=1 make monitoring-tools)")
	}
	q := url.Values{}
	for i, expr := range []string{
		`sum by (webhook) (rate(controller_runtime_webhook_requests_total{namespace="` + ns + `"}[5m]))`,
		`sum by (method, code) (rate(listener_operator_csi_requests_total{namespace="` + ns + `"}[5m]))`,
		`sum by (controller, result) (rate(controller_runtime_reconcile_total{namespace="` + ns + `",controller=~"listener|listener-claim|podlisteners"}[5m]))`,
	} {
		g := fmt.Sprintf("g%d.", i)
		q.Set(g+"expr", expr)
		q.Set(g+"tab", "0")
		q.Set(g+"range_input", "2m")
	}
	// A picture with lines, not points: some 40 s of samples first.
	eventually(t, ctx, 2*time.Minute, "40 s of samples for the picture", func(ctx context.Context) (bool, string) {
		n, err := promQuery(ctx, addr, `count_over_time(up{job="apiserver"}[2m]) >= 20`)
		return err == nil && n > 0, fmt.Sprint(err)
	})
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(out)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--window-size=1280,2400", "--virtual-time-budget=15000", "--user-data-dir="+t.TempDir(), "--screenshot="+out,
		"http://"+addr+"/graph?"+q.Encode())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	png, err := os.ReadFile(out)
	if err != nil || len(png) < 10_000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v; want a PNG of the graph page", out, len(png), err)
	}
	t.Logf("screenshot of Prometheus's graph page: %s (%d bytes)", out, len(png))
}
