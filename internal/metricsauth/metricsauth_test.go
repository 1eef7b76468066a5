package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// apiServer answers reviews as the API server would for a few known tokens
// and counts them. (The real API server is asked in cmd's
// TestMetricsNeedAuthorisation.)
type apiServer struct {
	users    map[string]string // token → user
	readers  map[string]bool   // users who may get /metrics
	down     bool
	reviews  int
	accesses int
}

type tokenReviews struct {
	authenticationclient.TokenReviewInterface
	s *apiServer
}

func (t tokenReviews) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	t.s.reviews++
	if t.s.down {
		return nil, errors.New("connection refused")
	}
	out := tr.DeepCopy()
	if u, ok := t.s.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
	}
	return out, nil
}

type accessReviews struct {
	authorizationclient.SubjectAccessReviewInterface
	s *apiServer
}

func (a accessReviews) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.s.accesses++
	out := sar.DeepCopy()
	na := sar.Spec.NonResourceAttributes
	out.Status.Allowed = a.s.readers[sar.Spec.User] && na != nil && na.Path == "/metrics" && na.Verb == "get"
	return out, nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestReviewer() (*Reviewer, *apiServer, *clock) {
	s := &apiServer{
		users:   map[string]string{"prom-token": "system:serviceaccount:monitoring:prometheus", "other-token": "system:serviceaccount:default:stranger"},
		readers: map[string]bool{"system:serviceaccount:monitoring:prometheus": true},
	}
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	return NewReviewer(tokenReviews{s: s}, accessReviews{s: s}, c.now), s, c
}

// TestHandler: what a scraper reads for each kind of caller.
func TestHandler(t *testing.T) {
	r, s, _ := newTestReviewer()
	h := r.Handler(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE up gauge")
	}))
	for _, tc := range []struct {
		name, method, path, auth string
		down                     bool
		wantCode                 int
		wantBody                 string
	}{
		{"no token", "GET", "/metrics", "", false, 401, "send a bearer token"},
		{"not bearer", "GET", "/metrics", "Basic cHJvbTpwcm9t", false, 401, "Unauthorized"},
		{"a token the API server never issued", "GET", "/metrics", "Bearer not-a-token", false, 401, "Unauthorized"},
		{"a token longer than any token", "GET", "/metrics", "Bearer " + strings.Repeat("a", maxTokenBytes+1), false, 401, "Unauthorized"},
		{"an identity not bound", "GET", "/metrics", "Bearer other-token", false, 403, `user "system:serviceaccount:default:stranger" may not get /metrics; bind it to the operator's metrics-reader ClusterRole`},
		{"a reader, another path", "GET", "/debug", "Bearer prom-token", false, 403, "may not get /debug"},
		{"a reader, another verb", "DELETE", "/metrics", "Bearer prom-token", false, 403, "may not delete /metrics"},
		{"a reader", "GET", "/metrics", "Bearer prom-token", false, 200, "# TYPE up gauge"},
		{"a reader, lower-case scheme", "GET", "/metrics", "bearer prom-token", false, 200, "# TYPE up gauge"},
		{"the API server is down", "GET", "/metrics", "Bearer never-seen", true, 500, "could not review the request; try again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.down = tc.down
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

// TestDecisionsAreRemembered: a scraper costs two reviews per minute, a
// refused caller is asked about again after 30 s, and a failed review is
// not remembered.
func TestDecisionsAreRemembered(t *testing.T) {
	r, s, c := newTestReviewer()
	ctx := t.Context()
	decide := func(token string) Decision {
		t.Helper()
		d, _, err := r.Decide(ctx, token, "get", "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for range 10 {
		if d := decide("prom-token"); d != Allowed {
			t.Fatalf("decision %v, want Allowed", d)
		}
		c.t = c.t.Add(5 * time.Second)
	}
	if s.reviews != 1 || s.accesses != 1 {
		t.Fatalf("10 scrapes in 50 s: %d token and %d access reviews, want 1 and 1", s.reviews, s.accesses)
	}
	c.t = c.t.Add(allowTTL)
	decide("prom-token")
	if s.reviews != 2 {
		t.Fatalf("after a minute: %d token reviews, want 2", s.reviews)
	}

	// Refused: remembered for 30 s, then asked again (a binding made in the
	// meantime takes effect).
	decide("other-token")
	decide("other-token")
	if s.accesses != 3 {
		t.Fatalf("access reviews %d, want 3", s.accesses)
	}
	s.readers["system:serviceaccount:default:stranger"] = true
	c.t = c.t.Add(denyTTL)
	if d := decide("other-token"); d != Allowed {
		t.Fatalf("30 s after the binding: %v, want Allowed", d)
	}

	// A failed review is not remembered.
	s.down = true
	if _, _, err := r.Decide(ctx, "new-token", "get", "/metrics"); err == nil {
		t.Fatal("no error with the API server down")
	}
	s.down = false
	s.users["new-token"] = "system:serviceaccount:monitoring:prometheus"
	if d := decide("new-token"); d != Allowed {
		t.Fatalf("once the API server is back: %v, want Allowed", d)
	}
}

// TestDecisionsAreBounded: a caller sending a new token (or path) with
// every request does not make the table grow, and a scraper's decision
// survives it as long as it is younger than the newcomers'.
func TestDecisionsAreBounded(t *testing.T) {
	r, s, c := newTestReviewer()
	ctx := t.Context()
	for i := range 10 * maxEntries {
		c.t = c.t.Add(time.Millisecond)
		if _, _, err := r.Decide(ctx, fmt.Sprintf("junk-%d", i), "get", "/metrics"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Decide(ctx, "prom-token", "get", fmt.Sprintf("/metrics/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.decisions.Len(); n > maxEntries {
		t.Fatalf("%d decisions remembered, want at most %d", n, maxEntries)
	}
	long := "/" + strings.Repeat("x", maxPathBytes)
	before := r.decisions.Len()
	if _, _, err := r.Decide(ctx, "prom-token", "get", long); err != nil {
		t.Fatal(err)
	}
	if r.decisions.Len() > before {
		t.Fatal("a long path was remembered")
	}
	if s.reviews != 10*maxEntries*2+1 {
		t.Fatalf("reviews %d: every new question should be asked once", s.reviews)
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"", ""},
		{"Bearer", ""},
		{"Bearer ", ""},
		{"Bearer abc", "abc"},
		{"bearer abc ", "abc"},
		{"BEARER abc", "abc"},
		{"Basic abc", ""},
		{"Bearerabc", ""},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		if got := bearerToken(req); got != tc.want {
			t.Errorf("bearerToken(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}
