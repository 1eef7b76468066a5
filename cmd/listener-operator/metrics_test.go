package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
