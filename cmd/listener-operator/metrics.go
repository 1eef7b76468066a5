package main

import (
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// uncompressedMetrics is the metrics servers' filter: it serves /metrics
// uncompressed, whatever the scraper accepts. The text is tens of KB, while
// compressing it takes a gzip writer of about 800 KB of heap per concurrent
// scrape, which a scrape every 15 to 30 s keeps alive on every replica and
// every node plugin.
func uncompressedMetrics(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(_ logr.Logger, h http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept-Encoding") != "" {
				// A handler must not modify the request it was given.
				r = r.Clone(r.Context())
				r.Header.Del("Accept-Encoding")
			}
			h.ServeHTTP(w, r)
		}), nil
	}, nil
}
