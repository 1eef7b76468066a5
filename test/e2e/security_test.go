//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/metricsscrape"
)

// scraperOnce holds the e2e tests' metrics scraper: the service account
// listener-operator-e2e-scraper, bound to the metrics-reader role.
var scraperOnce struct {
	sync.Once
	s   *metricsscrape.Scraper
	err error
}

// metricsOf reads an operator pod's /metrics as Prometheus does (HTTPS,
// a service account token allowed to get /metrics), from the host, which
// reaches pod IPs over the bridge.
func metricsOf(ctx context.Context, pod *corev1.Pod) (string, error) {
	scraperOnce.Do(func() {
		scraperOnce.s, scraperOnce.err = metricsscrape.ForServiceAccount(ctx, k8s.client, operatorNamespace, "listener-operator-e2e-scraper")
	})
	if scraperOnce.err != nil {
		return "", scraperOnce.err
	}
	return scraperOnce.s.Get(ctx, pod.Status.PodIP)
}

// TestMetricsNeedAToken: every component (manager replicas, CSI controller,
// node plugins) refuses a scrape without credentials and serves one with
// the token of a service account bound to listener-operator-metrics-reader.
func TestMetricsNeedAToken(t *testing.T) {
	ctx := t.Context()
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	anonymous := metricsscrape.New("")
	seen := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		comp := p.Labels["app.kubernetes.io/component"]
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || (comp != "controller" && comp != "csi-controller" && comp != "csi-node") {
			continue
		}
		seen[comp] = true
		t.Run(p.Name, func(t *testing.T) {
			url := "https://" + p.Status.PodIP + ":8443/metrics"
			if code, body, err := anonymous.Do(ctx, url); err != nil || code != http.StatusUnauthorized {
				t.Errorf("scrape without a token: %d %.100q %v, want 401", code, body, err)
			}
			// Nor over plain HTTP, as before.
			if code, _, err := anonymous.Do(ctx, "http://"+p.Status.PodIP+":8080/metrics"); err == nil {
				t.Errorf("plain HTTP on :8080 answered %d, want nothing listening", code)
			}
			body, err := metricsOf(ctx, p)
			if err != nil {
				t.Fatalf("scrape with the metrics-reader token: %v", err)
			}
			if !strings.Contains(body, "# TYPE rest_client_requests_total") {
				t.Errorf("scrape with the metrics-reader token: no client-go metrics in %.300q", body)
			}
		})
	}
	for _, comp := range []string{"controller", "csi-controller", "csi-node"} {
		if !seen[comp] {
			t.Errorf("no running %s pod in %s", comp, operatorNamespace)
		}
	}
}
