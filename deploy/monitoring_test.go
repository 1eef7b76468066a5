package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// renderMonitoring renders the chart with the dashboard and the alerts on.
func renderMonitoring(t *testing.T, values ...string) objects {
	t.Helper()
	return parse(t, helm(t, append([]string{"monitoring.dashboard.enabled=true", "monitoring.prometheusRule.enabled=true"}, values...)...))
}

// TestAlertRules runs `promtool test rules` (testdata/alerts_test.yaml) on
// the alerts as the chart renders them.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed and could not be (make monitoring-tools installs Debian's prometheus package; it needs root and apt-get)")
	}
	rule := renderMonitoring(t).get(t, "PrometheusRule", namespace, "listener-operator")
	spec, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": spec, "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert has a test, and a runbook section in docs/monitoring.md.
	docs, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range slice(t, rule.Object, "spec", "groups") {
		for _, r := range slice(t, g.(map[string]any), "rules") {
			name := r.(map[string]any)["alert"].(string)
			if !strings.Contains(string(tests), "alertname: "+name+"\n") {
				t.Errorf("alert %s has no test in testdata/alerts_test.yaml", name)
			}
			if !strings.Contains(string(docs), "### "+name+"\n") {
				t.Errorf("alert %s has no runbook section (### %s) in docs/monitoring.md", name, name)
			}
		}
	}
}

// TestMonitoringObjects: the values that shape the dashboard ConfigMap and
// the PrometheusRule land there; both are off by default.
func TestMonitoringObjects(t *testing.T) {
	for k := range parse(t, helm(t)) {
		if strings.HasPrefix(k, "PrometheusRule/") || strings.HasSuffix(k, "-dashboard") {
			t.Errorf("rendered by default: %s", k)
		}
	}
	o := renderMonitoring(t, "monitoring.dashboard.labels.team=platform", "monitoring.dashboard.annotations.grafana_folder=Platform",
		"monitoring.prometheusRule.labels.release=prom", "monitoring.prometheusRule.for=3m", "monitoring.prometheusRule.certificateExpiryDays=14",
		"monitoring.prometheusRule.runbookURL=https://wiki.example/listeners")
	cm := o.get(t, "ConfigMap", namespace, "listener-operator-dashboard")
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "listener-operator.json")
	if err := json.Unmarshal([]byte(raw), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	// Every metric a query names is one the components export (the table
	// in docs/install.md) or the API server's admission metrics.
	install, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`\b(listener_operator_[a-z_]+?)(_bucket|_sum|_count)?\{`)
	for _, e := range exprs {
		for _, m := range metric.FindAllStringSubmatch(e, -1) {
			if !strings.Contains(string(install), "`"+m[1]+"`") {
				t.Errorf("dashboard query uses %s, which docs/install.md does not list as exported", m[1])
			}
		}
	}
	rule := o.get(t, "PrometheusRule", namespace, "listener-operator")
	rules, _ := yaml.Marshal(rule.Object["spec"])
	checks := []check{
		{"dashboard sidecar label", cm.GetLabels()["grafana_dashboard"], "1"},
		{"dashboard extra label", cm.GetLabels()["team"], "platform"},
		{"dashboard annotation", cm.GetAnnotations()["grafana_folder"], "Platform"},
		{"dashboard uid", dash.UID, "listener-operator"},
		{"dashboard queries", len(exprs) >= 12, true},
		{"rule label", rule.GetLabels()["release"], "prom"},
		{"for", strings.Contains(string(rules), "for: 3m"), true},
		{"certificate days", strings.Contains(string(rules), "< 1209600"), true},
		{"runbook", strings.Contains(string(rules), "runbook_url: https://wiki.example/listeners#listenerpinnednodelost"), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, "listener_operator_pinned_node_lost") }) {
		t.Error("the dashboard does not show claims pinned to lost nodes")
	}
}
