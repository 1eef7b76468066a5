// Package metricsscrape reads the operator's components' /metrics as
// Prometheus does when they serve it behind Kubernetes authentication and
// authorisation (the default, docs/install.md "Metrics"): over HTTPS, with
// the token of a service account bound to ClusterRole
// listener-operator-metrics-reader. make scale and the end-to-end tests use
// it; it is not part of the operator.
package metricsscrape
