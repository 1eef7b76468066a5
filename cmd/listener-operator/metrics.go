package main

import (
	"crypto/tls"
	"flag"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/listener-operator/listener-operator/internal/metricsauth"
)

// metricsOptions are the metrics flags of every long-running subcommand
// (controller, csi --mode=controller, csi --mode=node).
type metricsOptions struct {
	addr    string
	secure  bool
	certDir string
}

// defaultMetricsAddr is where every component serves /metrics: HTTPS
// unless --metrics-secure=false.
const defaultMetricsAddr = ":8443"

func (m *metricsOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.addr, "metrics-bind-address", defaultMetricsAddr, "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&m.secure, "metrics-secure", true, "Serve /metrics over HTTPS, only to callers the API server authenticates (TokenReview) and authorises (SubjectAccessReview: get on the non-resource URL /metrics, e.g. ClusterRole listener-operator-metrics-reader); false: plain HTTP to anyone who reaches the port.")
	fs.StringVar(&m.certDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key of the metrics server (default: a self-signed certificate generated at start, so scrapers skip verification or pin it).")
}

// serverOptions is controller-runtime's metrics server configuration for
// these flags. run, when not nil, is the registry of one run of a
// subcommand, served with controller-runtime's (process-wide: client-go's
// metrics): a run registers its own metrics there, so that a second run
// in one process (the tests) registers nothing twice.
func (m metricsOptions) serverOptions(run prometheus.Gatherer) metricsserver.Options {
	var filters []filterProvider
	if m.secure {
		filters = append(filters, metricsauth.Filter) // outermost: nothing unauthorised gets further
	}
	filters = append(filters, uncompressedMetrics)
	if run != nil {
		filters = append(filters, alsoGathering(run))
	}
	o := metricsserver.Options{
		BindAddress:    m.addr,
		FilterProvider: chainFilters(filters...),
	}
	if m.secure {
		o.SecureServing = true
		o.CertDir = m.certDir
		o.TLSOpts = []func(*tls.Config){metricsTLS}
	}
	return o
}

// alsoGathering is the innermost filter of a metrics server that serves
// run's metrics too: controller-runtime's server serves only its own
// registry (metrics.Registry), and the filter is the one place to serve
// more from it.
func alsoGathering(run prometheus.Gatherer) filterProvider {
	return func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
		h := promhttp.HandlerFor(prometheus.Gatherers{metrics.Registry, run}, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
		return func(logr.Logger, http.Handler) (http.Handler, error) { return h, nil }, nil
	}
}

// metricsTLS: TLS 1.2 or later, HTTP/1.1 only (HTTP/2's rapid-reset and
// stream floods are not worth it for one scrape every 15 to 30 s).
func metricsTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.NextProtos = []string{"http/1.1"}
}

// filterProvider makes one filter of a metrics server (its FilterProvider).
type filterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error)

// chainFilters applies the filters in order: the first one sees the
// request first.
func chainFilters(providers ...filterProvider) filterProvider {
	return func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		fs := make([]metricsserver.Filter, 0, len(providers))
		for _, p := range providers {
			f, err := p(cfg, hc)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return func(log logr.Logger, h http.Handler) (http.Handler, error) {
			for i := len(fs) - 1; i >= 0; i-- {
				var err error
				if h, err = fs[i](log, h); err != nil {
					return nil, err
				}
			}
			return h, nil
		}, nil
	}
}

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
