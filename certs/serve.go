package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// File names in the certificate directory, as cert-manager's Secrets and
// controller-runtime's webhook server name them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Watcher serves the certificate in a directory through controller-runtime's
// certwatcher, so that a renewed certificate is served without a restart. It
// differs from the webhook server's built-in watcher in one way: it starts
// without the files and waits for them (a Secret mounted as optional, or the
// self-signed Secret not copied yet), so that the process keeps running and
// readiness explains what is missing.
type Watcher struct {
	// Dir holds tls.crt and tls.key.
	Dir string
	// Poll is how often to look for the files before they exist, and how
	// often the certwatcher re-reads them besides file events (default 10s).
	Poll time.Duration
	// Now is the clock of the readiness check; nil means time.Now.
	Now func() time.Time
	// Trusted, when set, returns the caBundles the API server verifies this
	// server with (self-signed mode: InjectedBundles); the readiness check
	// then also requires the served certificate to chain to each.
	Trusted func(ctx context.Context) ([][]byte, error)

	mu sync.RWMutex
	cw *certwatcher.CertWatcher
}

func (w *Watcher) poll() time.Duration { return orDefault(w.Poll, 10*time.Second) }

func (w *Watcher) paths() (string, string) {
	return filepath.Join(w.Dir, CertFile), filepath.Join(w.Dir, KeyFile)
}

// Start waits for the files, then watches them until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webhook-cert-watcher").WithValues("dir", w.Dir)
	certPath, keyPath := w.paths()
	// Look every second while there is nothing to serve: a replica is not
	// ready until then.
	ticker := time.NewTicker(min(w.poll(), time.Second))
	defer ticker.Stop()
	var lastErr string
	for {
		cw, err := certwatcher.New(certPath, keyPath)
		if err == nil {
			w.mu.Lock()
			w.cw = cw.WithWatchInterval(w.poll())
			w.mu.Unlock()
			logger.Info("serving webhook certificate", "subject", w.leafSubject())
			return cw.Start(ctx)
		}
		if err.Error() != lastErr {
			logger.Info("waiting for the webhook serving certificate", "reason", err.Error())
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection is false: every replica serves webhooks.
func (w *Watcher) NeedLeaderElection() bool { return false }

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (w *Watcher) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w.mu.RLock()
	cw := w.cw
	w.mu.RUnlock()
	if cw == nil {
		return nil, fmt.Errorf("no webhook serving certificate in %s yet", w.Dir)
	}
	return cw.GetCertificate(hello)
}

// Leaf is the certificate being served, nil before one is loaded.
func (w *Watcher) Leaf() *x509.Certificate {
	c, err := w.GetCertificate(nil)
	if err != nil || c == nil || len(c.Certificate) == 0 {
		return nil
	}
	if c.Leaf != nil {
		return c.Leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

func (w *Watcher) leafSubject() string {
	if l := w.Leaf(); l != nil {
		return l.Subject.String()
	}
	return ""
}

// ReadyCheck passes when a certificate is loaded and valid now and the
// webhook server answers TLS (started, from the server's StartedChecker; nil
// skips that part).
func (w *Watcher) ReadyCheck(serverStarted healthz.Checker) healthz.Checker {
	return func(req *http.Request) error {
		leaf := w.Leaf()
		if leaf == nil {
			return fmt.Errorf("no webhook serving certificate loaded from %s", w.Dir)
		}
		now := time.Now()
		if w.Now != nil {
			now = w.Now()
		}
		if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return fmt.Errorf("webhook serving certificate is valid from %s to %s, not now", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		if w.Trusted != nil {
			bundles, err := w.Trusted(req.Context())
			if err != nil {
				return err
			}
			for _, b := range bundles {
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(b) {
					return errors.New("a webhook's caBundle holds no CA yet")
				}
				if err := VerifyLeaf(leaf, pool, ""); err != nil {
					return fmt.Errorf("the API server would refuse this replica: %w", err)
				}
			}
		}
		if serverStarted != nil {
			return serverStarted(req)
		}
		return nil
	}
}

// SecretSync is every replica's half of the self-signed mode: it copies the
// serving certificate from the Secret into the certificate directory, where
// the Watcher picks it up. Reading the Secret directly (rather than
// mounting it) lets the Deployment start before the leader has created the
// certificate and spreads a rotation within one Interval.
type SecretSync struct {
	// Reader reads the Secret from the API server.
	Reader client.Reader
	// Namespace and SecretName locate the Secret.
	Namespace, SecretName string
	// Dir receives tls.crt and tls.key.
	Dir string
	// Interval between reads (default 10s).
	Interval time.Duration
}

// NeedLeaderElection is false: every replica serves webhooks.
func (s *SecretSync) NeedLeaderElection() bool { return false }

// Start copies the Secret every Interval until ctx ends.
func (s *SecretSync) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webhook-cert-sync").WithValues("secret", s.Namespace+"/"+s.SecretName, "dir", s.Dir)
	interval := orDefault(s.Interval, 10*time.Second)
	// Every second until the first copy (the replica is not ready before),
	// then every interval.
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastErr string
	copied := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		changed, err := s.SyncOnce(ctx)
		if err == nil {
			copied = true
		}
		if copied {
			timer.Reset(interval)
		} else {
			timer.Reset(min(interval, time.Second))
		}
		switch {
		case err != nil && err.Error() != lastErr:
			logger.Info("cannot copy the webhook certificate yet", "reason", err.Error())
			lastErr = err.Error()
		case err == nil && changed:
			logger.Info("copied a new webhook serving certificate")
			lastErr = ""
		}
	}
}

// SyncOnce copies the Secret's serving certificate into Dir when it differs
// from the files there, and says whether it did.
func (s *SecretSync) SyncOnce(ctx context.Context) (bool, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.SecretName}
	if err := s.Reader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Secret %s does not exist yet (the leader creates its content)", key)
		}
		return false, fmt.Errorf("read Secret %s: %w", key, err)
	}
	certPEM, keyPEM := secret.Data[KeyTLSCert], secret.Data[KeyTLSKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return false, fmt.Errorf("Secret %s has no serving certificate yet", key)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return false, fmt.Errorf("Secret %s holds an unusable serving certificate: %w", key, err)
	}
	return WriteKeyPair(s.Dir, certPEM, keyPEM)
}

// WriteKeyPair writes tls.crt and tls.key into dir unless they already hold
// these bytes, each through a rename so that a reader never sees half a
// file. The key goes first: the certwatcher re-reads on every change and
// keeps serving the old pair while the two files do not match.
func WriteKeyPair(dir string, certPEM, keyPEM []byte) (bool, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	oldCert, _ := os.ReadFile(certPath)
	oldKey, _ := os.ReadFile(keyPath)
	if bytes.Equal(oldCert, certPEM) && bytes.Equal(oldKey, keyPEM) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("create certificate directory: %w", err)
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return false, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// RegisterMetrics exposes the served certificate's expiry as
// listener_operator_webhook_certificate_expiry_timestamp_seconds (0 while
// nothing is served), so that an alert can fire before a certificate that
// nobody renews expires, whatever the mode.
func (w *Watcher) RegisterMetrics(reg prometheus.Registerer) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "listener_operator_webhook_certificate_expiry_timestamp_seconds",
		Help: "Expiry (notAfter, Unix seconds) of the certificate the webhook server presents; 0 when none is loaded.",
	}, func() float64 {
		if leaf := w.Leaf(); leaf != nil {
			return float64(leaf.NotAfter.Unix())
		}
		return 0
	})
	if err := reg.Register(g); err != nil {
		// A process runs one manager; a second one (in tests) keeps the
		// first registration rather than failing to start.
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			return nil
		}
		return fmt.Errorf("register webhook certificate metric: %w", err)
	}
	return nil
}
