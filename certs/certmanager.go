package certs

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The cert-manager mode reads its one Certificate: granted only in this
// mode, by config/certmanager/rbac.yaml (and the chart's mode-rbac.yaml).

// DefaultCertificateName is the cert-manager Certificate of the webhook
// Service that config/certmanager creates.
const DefaultCertificateName = "listener-operator-serving-cert"

// CertificateReady explains why a cert-manager Certificate cannot be served
// yet, or returns nil when it is Ready and not expired at now.
func CertificateReady(cert *cmv1.Certificate, now time.Time) error {
	key := cert.Namespace + "/" + cert.Name
	var ready *cmv1.CertificateCondition
	for i := range cert.Status.Conditions {
		if cert.Status.Conditions[i].Type == cmv1.CertificateConditionReady {
			ready = &cert.Status.Conditions[i]
		}
	}
	switch {
	case ready == nil:
		return fmt.Errorf("cert-manager Certificate %s has no Ready condition: cert-manager has not processed it (is the cert-manager controller running?)", key)
	case ready.Status != cmmeta.ConditionTrue:
		return fmt.Errorf("cert-manager Certificate %s is not Ready: %s: %s (kubectl describe certificate -n %s %s)", key, ready.Reason, ready.Message, cert.Namespace, cert.Name)
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration < cert.Generation:
		return fmt.Errorf("cert-manager Certificate %s changed and cert-manager has not reissued it yet", key)
	case cert.Status.NotAfter != nil && now.After(cert.Status.NotAfter.Time):
		return fmt.Errorf("cert-manager Certificate %s expired at %s and was not renewed", key, cert.Status.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// CertManagerCheck tells the user at start-up (in the log, and in /readyz
// until it is resolved) when cert-manager is missing or the webhook's
// Certificate is not Ready, instead of letting the API server fail later
// with a TLS error.
type CertManagerCheck struct {
	// Reader reads the Certificate (its scheme has cert-manager's types).
	Reader client.Reader
	// Namespace and Certificate locate the Certificate.
	Namespace, Certificate string
	// Interval between checks until the Certificate is Ready, and after
	// (default 30s).
	Interval time.Duration

	mu   sync.Mutex
	last error
	done bool
}

// Check looks at cert-manager and the Certificate once.
func (c *CertManagerCheck) Check(ctx context.Context) error {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Certificate}
	cert := &cmv1.Certificate{}
	err := c.Reader.Get(ctx, key, cert)
	switch {
	case meta.IsNoMatchError(err) || (apierrors.IsNotFound(err) && isMissingType(err)):
		return fmt.Errorf("cert-manager is not installed: the API server does not serve %s (install cert-manager, or run with --cert-mode=self-signed and the config/selfsigned manifests)", cmv1.SchemeGroupVersion.WithResource("certificates").GroupResource())
	case apierrors.IsNotFound(err):
		return fmt.Errorf("cert-manager Certificate %s does not exist: apply config/certmanager (or the Helm chart with certMode=cert-manager), or point --cert-manager-certificate at yours", key)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot read cert-manager Certificate %s: %w (the operator's Role must allow get on it)", key, err)
	case err != nil:
		return fmt.Errorf("read cert-manager Certificate %s: %w", key, err)
	}
	return CertificateReady(cert, time.Now())
}

// isMissingType recognises the 404 the API server returns for a whole
// resource type (rather than one object) when discovery was cached before
// the CRD went away.
func isMissingType(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == "" && d.Kind == ""
}

// NeedLeaderElection is false: every replica serves, so every replica tells.
func (c *CertManagerCheck) NeedLeaderElection() bool { return false }

// Start checks every Interval and logs each change of the outcome.
func (c *CertManagerCheck) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("cert-manager-check").WithValues("certificate", c.Namespace+"/"+c.Certificate)
	ticker := time.NewTicker(orDefault(c.Interval, 30*time.Second))
	defer ticker.Stop()
	var lastMsg string
	first := true
	for {
		err := c.Check(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.mu.Lock()
		c.last, c.done = err, true
		c.mu.Unlock()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if first || msg != lastMsg {
			if err != nil {
				logger.Error(err, "the webhook has no usable certificate from cert-manager; the API server will fail to call it until this is fixed")
			} else {
				logger.Info("cert-manager Certificate is Ready")
			}
		}
		first, lastMsg = false, msg
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// ReadyCheck reports the outcome of the last check.
func (c *CertManagerCheck) ReadyCheck() healthz.Checker {
	return func(*http.Request) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.done {
			return fmt.Errorf("cert-manager Certificate %s/%s not checked yet", c.Namespace, c.Certificate)
		}
		return c.last
	}
}
