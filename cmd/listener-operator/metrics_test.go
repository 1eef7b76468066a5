package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/listener-operator/listener-operator/internal/metricsscrape"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestUncompressedMetrics: a scraper that offers gzip (Prometheus, Go's
// HTTP client) gets the metrics as plain text.
func TestUncompressedMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_scrapes_total", Help: "Scrapes."})
	reg.MustRegister(c)
	c.Inc()
	filter, err := uncompressedMetrics(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		filtered bool
		wantGzip bool
	}{
		{"promhttp alone compresses", false, true},
		{"through the filter", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			if tc.filtered {
				if h, err = filter(logr.Discard(), h); err != nil {
					t.Fatal(err)
				}
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tc.wantGzip {
				t.Fatalf("gzip = %v, want %v", got, tc.wantGzip)
			}
			if req.Header.Get("Accept-Encoding") != "gzip" {
				t.Fatal("the filter changed the caller's request")
			}
			body, _ := io.ReadAll(rec.Body)
			if !tc.wantGzip && !strings.Contains(string(body), "test_scrapes_total 1") {
				t.Fatalf("body:\n%s", body)
			}
		})
	}
}

// TestMetricsNeedAuthorisation serves /metrics as the components do by
// default, as an identity that holds only config/rbac's metrics-auth role,
// and scrapes it as Prometheus would: with no token (refused), with the
// token of a service account that may not get /metrics (forbidden) and with
// one bound to config/rbac's metrics-reader role (served).
func TestMetricsNeedAuthorisation(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	root := testenv.RepoRoot()
	serverCfg, err := e.UserWithClusterRole(ctx, "metrics-server", filepath.Join(root, "config/rbac/metrics_auth_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The scrapers: service accounts with tokens from the API server.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metrics-scrapers"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config/rbac/metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, reader); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "prometheus"}},
	}
	for _, o := range []client.Object{reader, binding,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "prometheus"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "stranger"}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token of %s: %v", sa, err)
		}
		return tr.Status.Token
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := newMetricsServer(metricsOptions{addr: addr, secure: true}, serverCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The certificate is self-signed: Prometheus skips verification
	// (the ServiceMonitor's tlsConfig), as metricsscrape (make scale, e2e)
	// does.
	scrape := func(scheme, bearer string) (int, string, error) {
		return metricsscrape.New(bearer).Do(ctx, scheme+"://"+addr+"/metrics")
	}
	testenv.Eventually(t, 30*time.Second, "the metrics server listens", func() error {
		_, _, err := scrape("https", "")
		return err
	})
	for _, tc := range []struct {
		name     string
		scheme   string
		token    string
		wantCode int
		wantBody string
	}{
		{"no token", "https", "", http.StatusUnauthorized, "Unauthorized"},
		{"a token the API server never issued", "https", "not-a-token", http.StatusUnauthorized, "send a bearer token the Kubernetes API server accepts"},
		{"a service account not bound to metrics-reader", "https", token("stranger"), http.StatusForbidden, `user "system:serviceaccount:metrics-scrapers:stranger" may not get /metrics`},
		{"Prometheus bound to metrics-reader", "https", token("prometheus"), http.StatusOK, "# TYPE "},
		{"plain HTTP", "http", token("prometheus"), http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := scrape(tc.scheme, tc.token)
			if tc.scheme == "http" {
				// Refused: a 400 or a reset connection, never the metrics.
				if err == nil && (code == http.StatusOK || strings.Contains(body, "# TYPE")) {
					t.Errorf("plain HTTP scrape: %d %.200q", code, body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET /metrics: %d %.200q, want %d with %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// TestMetricsServeTheRun: the metrics server of a run of a subcommand
// serves the run's registry with controller-runtime's, through the plain
// and the secure chain alike, and two runs register the same metrics each
// in a registry of its own (the CSI subcommand registered on the
// process-wide one: a second run failed with "duplicate metrics collector
// registration attempted").
func TestMetricsServeTheRun(t *testing.T) {
	for run := range 2 {
		reg := prometheus.NewRegistry()
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_run_calls_total", Help: "Calls."})
		if err := reg.Register(c); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		c.Add(float64(run + 1))
		filter, err := metricsOptions{addr: "127.0.0.1:0"}.serverOptions(reg).FilterProvider(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := filter(logr.Discard(), http.NotFoundHandler())
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if want := fmt.Sprintf("test_run_calls_total %d", run+1); rec.Code != http.StatusOK || !strings.Contains(body, want) || !strings.Contains(body, "listener_operator_events_dropped_total") {
			t.Errorf("run %d: %d, body without %q or the process-wide registry's metrics:\n%s", run, rec.Code, want, body)
		}
	}
}
