package metricsscrape

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Port is where every component serves /metrics (HTTPS by default).
const Port = 8443

// ReaderRole is the ClusterRole that may get /metrics (config/rbac).
const ReaderRole = "listener-operator-metrics-reader"

// Scraper reads /metrics with a bearer token.
type Scraper struct {
	// Token is sent as "Authorization: Bearer"; empty sends none.
	Token string
	http  *http.Client
}

// New is a scraper that sends token (empty: none). The components'
// certificates are self-signed at start, so it does not verify them, as the
// chart's ServiceMonitor does not.
func New(token string) *Scraper {
	return &Scraper{Token: token, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed at start
	}}
}

// ForServiceAccount makes sure namespace/name is a service account bound
// to ReaderRole and returns a scraper with a token of it, valid for an
// hour.
func ForServiceAccount(ctx context.Context, c client.Client, namespace, name string) (*Scraper, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create service account %s/%s: %w", namespace, name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("bind %s to %s: %w", name, ReaderRole, err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("token of service account %s/%s: %w", namespace, name, err)
	}
	return New(tr.Status.Token), nil
}

// Get reads https://<ip>:Port/metrics; an answer other than 200 is an
// error that carries its status and body.
func (s *Scraper) Get(ctx context.Context, ip string) (string, error) {
	return s.GetURL(ctx, "https://"+net.JoinHostPort(ip, strconv.Itoa(Port))+"/metrics")
}

// GetURL reads url; an answer other than 200 is an error with its status.
func (s *Scraper) GetURL(ctx context.Context, url string) (string, error) {
	code, body, err := s.Do(ctx, url)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("scrape %s: %d %.200s", url, code, body)
	}
	return body, nil
}

// Do reads url and returns the status code and (at most 64 MiB of) body.
func (s *Scraper) Do(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, "", fmt.Errorf("scrape %s: %w", url, err)
	}
	return resp.StatusCode, string(b), nil
}
