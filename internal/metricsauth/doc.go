// Package metricsauth lets a scrape of /metrics through only when the API
// server authenticates its bearer token (a TokenReview) and authorises the
// caller to get the path (a SubjectAccessReview on the non-resource URL),
// the way kube-rbac-proxy and controller-runtime's
// filters.WithAuthenticationAndAuthorization do.
//
// It exists so that every component does not link k8s.io/apiserver and
// cel-go for two API calls: that filter's delegating authenticator and
// authorizer made the binary 12 MB larger, and every process maps it
// (docs/benchmarks.md, "Controller memory"). Decisions are remembered for a
// short time in a bounded table keyed by a hash of the token, so a scraper
// costs two reviews a minute, not two per scrape, and no caller can make
// the table grow.
package metricsauth
