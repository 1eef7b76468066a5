package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a decision is remembered. An allowed caller keeps access for at
// most a minute after its token is revoked or its binding removed (what
// controller-runtime's filter gives a token); a refused one is asked about
// again after 30 s, so a binding added for Prometheus takes effect within a
// scrape or two.
const (
	allowTTL = time.Minute
	denyTTL  = 30 * time.Second
)

// maxEntries bounds the decisions remembered: a few scrapers need a few
// entries; a caller sending a new token every request only replaces the
// least recently used.
const maxEntries = 256

// maxTokenBytes: longer bearer tokens are refused without asking the API
// server (service account tokens are about 1 KB; the API server's own
// limit on a request header is far above what a token needs).
const maxTokenBytes = 16 << 10

// reviewTimeout bounds the two reviews of one scrape.
const reviewTimeout = 10 * time.Second

// Decision is what the filter answers a request with.
type Decision int

// The decisions, in the order a request meets them.
const (
	// Unauthenticated: no bearer token, or one the API server does not
	// accept (401).
	Unauthenticated Decision = iota
	// Forbidden: the caller may not get this path (403).
	Forbidden
	// Allowed: the request is served.
	Allowed
)

// Reviewer asks the API server about callers, remembering its answers for a
// short time.
type Reviewer struct {
	tokens    authenticationclient.TokenReviewInterface
	access    authorizationclient.SubjectAccessReviewInterface
	now       func() time.Time
	decisions *lru.Cache // key → entry, the most recently used maxEntries
}

// key identifies one question: who (the token's hash) may do what (verb,
// path). Paths longer than maxPathBytes are never remembered.
type key struct {
	token [sha256.Size]byte
	verb  string
	path  string
}

// maxPathBytes: only short paths are remembered (the metrics server serves
// /metrics); a long one is still reviewed, just not kept.
const maxPathBytes = 64

type entry struct {
	decision Decision
	user     string
	expires  time.Time
}

// NewReviewer asks through the given clients.
func NewReviewer(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface, now func() time.Time) *Reviewer {
	return &Reviewer{tokens: tokens, access: access, now: now, decisions: lru.New(maxEntries)}
}

// Filter is controller-runtime's metrics server filter: it serves a request
// only to a caller the API server authenticates and authorises. It is a
// metricsserver.Options FilterProvider.
func Filter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("token review client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("access review client: %w", err)
	}
	r := NewReviewer(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now)
	return func(log logr.Logger, h http.Handler) (http.Handler, error) {
		return r.Handler(log, h), nil
	}, nil
}

// Handler serves h to callers the API server lets through and answers the
// others with 401 or 403 and what to do about it.
func (r *Reviewer) Handler(log logr.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
		defer cancel()
		verb := strings.ToLower(req.Method)
		d, user, err := r.Decide(ctx, bearerToken(req), verb, req.URL.Path)
		switch {
		case err != nil:
			log.Error(err, "Reviewing a metrics request", "path", req.URL.Path)
			http.Error(w, "Authentication failed: the API server could not review the request; try again", http.StatusInternalServerError)
		case d == Unauthenticated:
			log.V(4).Info("Unauthenticated metrics request", "path", req.URL.Path)
			http.Error(w, "Unauthorized: send a bearer token the Kubernetes API server accepts (a service account token)", http.StatusUnauthorized)
		case d == Forbidden:
			log.V(4).Info("Forbidden metrics request", "user", user, "path", req.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s; bind it to the operator's metrics-reader ClusterRole (listener-operator-metrics-reader as installed by kustomize)", user, verb, req.URL.Path), http.StatusForbidden)
		default:
			h.ServeHTTP(w, req)
		}
	})
}

// bearerToken is the request's bearer token, "" if it has none.
func bearerToken(req *http.Request) string {
	const prefix = "bearer "
	v := req.Header.Get("Authorization")
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(v[len(prefix):])
}

// Decide says whether the holder of token may do verb on path, and who the
// API server says it is. An error means the API server could not be asked;
// it is not remembered.
func (r *Reviewer) Decide(ctx context.Context, token, verb, path string) (Decision, string, error) {
	if token == "" || len(token) > maxTokenBytes {
		return Unauthenticated, "", nil
	}
	k := key{token: sha256.Sum256([]byte(token)), verb: verb, path: path}
	remember := len(path) <= maxPathBytes
	if remember {
		if e, ok := r.lookup(k); ok {
			return e.decision, e.user, nil
		}
	}
	d, user, err := r.review(ctx, token, verb, path)
	if err != nil {
		return d, user, err
	}
	if remember {
		r.store(k, d, user)
	}
	return d, user, nil
}

// review asks the API server: a TokenReview, then a SubjectAccessReview for
// the identity it returned.
func (r *Reviewer) review(ctx context.Context, token, verb, path string) (Decision, string, error) {
	tr, err := r.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return Unauthenticated, "", fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return Unauthenticated, "", nil
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := r.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  u.Username,
		Groups:                u.Groups,
		UID:                   u.UID,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return Unauthenticated, u.Username, fmt.Errorf("access review of %q: %w", u.Username, err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return Forbidden, u.Username, nil
	}
	return Allowed, u.Username, nil
}

func (r *Reviewer) lookup(k key) (entry, bool) {
	v, ok := r.decisions.Get(k)
	if !ok {
		return entry{}, false
	}
	e := v.(entry)
	if !r.now().Before(e.expires) {
		r.decisions.Remove(k)
		return entry{}, false
	}
	return e, true
}

// store remembers a decision; with the table full, the least recently
// used one is forgotten.
func (r *Reviewer) store(k key, d Decision, user string) {
	ttl := denyTTL
	if d == Allowed {
		ttl = allowTTL
	}
	r.decisions.Add(k, entry{decision: d, user: user, expires: r.now().Add(ttl)})
}
