package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/certs"
	"github.com/listener-operator/listener-operator/webhooks"
)

// certOptions are the controller's flags about the webhook server's TLS.
type certOptions struct {
	mode                   string
	minTLSVersion          string
	enableHTTP2            bool
	secretName             string
	validity               time.Duration
	serviceName            string
	mutatingConfigs        string
	validatingConfigs      string
	certManagerCertificate string

	parsedMode certs.Mode
	minVersion uint16
	namespace  string
	watcher    *certs.Watcher
}

func (c *certOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.mode, "cert-mode", string(certs.ModeSelfSigned), "Where the webhook serving certificate comes from: self-signed (the operator issues and rotates its own CA and certificate), cert-manager (a cert-manager Certificate mounted into --webhook-cert-dir; cainjector sets caBundle), or files (serve what is mounted in --webhook-cert-dir).")
	fs.StringVar(&c.minTLSVersion, "webhook-tls-min-version", "1.2", "Minimum TLS version of the webhook server: 1.2 or 1.3.")
	fs.BoolVar(&c.enableHTTP2, "webhook-enable-http2", false, "Offer HTTP/2 on the webhook server (off by default: HTTP/2 rapid-reset and stream-exhaustion attacks).")
	fs.StringVar(&c.secretName, "cert-secret-name", certs.DefaultSecretName, "self-signed mode: the Secret in the operator's namespace that holds the CA and the serving certificate.")
	fs.DurationVar(&c.validity, "cert-validity", certs.DefaultServingValidity, "self-signed mode: lifetime of a serving certificate; it is renewed after two thirds of it.")
	fs.StringVar(&c.serviceName, "webhook-service-name", webhooks.ServiceName, "self-signed mode: the webhook Service whose DNS names the serving certificate covers.")
	fs.StringVar(&c.mutatingConfigs, "mutating-webhook-configuration", webhooks.MutatingConfigurationName, "self-signed mode: MutatingWebhookConfiguration(s) whose caBundle gets the CA (comma-separated; empty for none).")
	fs.StringVar(&c.validatingConfigs, "validating-webhook-configuration", webhooks.ValidatingConfigurationName, "self-signed mode: ValidatingWebhookConfiguration(s) whose caBundle gets the CA (comma-separated; empty for none).")
	fs.StringVar(&c.certManagerCertificate, "cert-manager-certificate", certs.DefaultCertificateName, "cert-manager mode: the Certificate in the operator's namespace whose readiness is checked at start-up and in /readyz.")
}

// complete validates the flags and creates the certificate watcher the
// webhook server serves from.
func (c *certOptions) complete(certDir, namespace string) error {
	var err error
	if c.parsedMode, err = certs.ParseMode(c.mode); err != nil {
		return fmt.Errorf("--cert-mode: %w", err)
	}
	if c.minVersion, err = certs.ParseTLSVersion(c.minTLSVersion); err != nil {
		return fmt.Errorf("--webhook-tls-min-version: %w", err)
	}
	if c.parsedMode != certs.ModeFiles && namespace == "" {
		return fmt.Errorf("--cert-mode=%s needs the operator's namespace: set --namespace (or POD_NAMESPACE)", c.parsedMode)
	}
	if c.parsedMode == certs.ModeSelfSigned && c.validity < 10*time.Minute {
		return fmt.Errorf("--cert-validity=%s is too short: use at least 10m", c.validity)
	}
	c.namespace = namespace
	c.watcher = &certs.Watcher{Dir: certDir}
	return nil
}

// tlsOptions are the webhook server's TLS settings, serving from the watcher.
func (c *certOptions) tlsOptions() []func(*tls.Config) {
	return certs.TLSOptions(c.minVersion, c.enableHTTP2, c.watcher.GetCertificate)
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// setup adds the certificate runnables of the chosen mode and gates
// readiness on the webhook server serving a valid certificate. A
// self-signed serving certificate names the webhook Service in
// clusterDomain, the one the reconcilers use; the bootstrap records its
// events with recorder.
func (c *certOptions) setup(mgr ctrl.Manager, clusterDomain string, recorder events.EventRecorder) error {
	if c.parsedMode == certs.ModeSelfSigned {
		// Ready only while the API server would trust what this replica
		// serves: the certificate chains to the injected caBundles.
		injected := &certs.InjectedBundles{Reader: mgr.GetAPIReader(), Mutating: splitNames(c.mutatingConfigs), Validating: splitNames(c.validatingConfigs)}
		c.watcher.Trusted = injected.Bundles
	}
	if err := mgr.Add(c.watcher); err != nil {
		return fmt.Errorf("add webhook certificate watcher: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-certificate", c.watcher.ReadyCheck(mgr.GetWebhookServer().StartedChecker())); err != nil {
		return fmt.Errorf("add webhook certificate ready check: %w", err)
	}
	if err := c.watcher.RegisterMetrics(metrics.Registry); err != nil {
		return err
	}
	switch c.parsedMode {
	case certs.ModeSelfSigned:
		hosts := certs.ServiceHosts(c.serviceName, c.namespace, clusterDomain)
		boot := &certs.Bootstrapper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: recorder, Opts: certs.SelfSignedOptions{
			Namespace:                       c.namespace,
			SecretName:                      c.secretName,
			Hosts:                           hosts,
			ServingValidity:                 c.validity,
			MutatingWebhookConfigurations:   splitNames(c.mutatingConfigs),
			ValidatingWebhookConfigurations: splitNames(c.validatingConfigs),
			// A CA change keeps the old CA trusted until every replica
			// behind the webhook Service serves a certificate of the new.
			Probe: &certs.EndpointProbe{Reader: mgr.GetAPIReader(), Namespace: c.namespace, Service: c.serviceName, ServerName: hosts[0]},
		}}
		if err := boot.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up self-signed webhook certificates: %w", err)
		}
		sync := &certs.SecretSync{Reader: mgr.GetAPIReader(), Namespace: c.namespace, SecretName: c.secretName, Dir: c.watcher.Dir}
		if err := mgr.Add(sync); err != nil {
			return fmt.Errorf("add webhook certificate sync: %w", err)
		}
	case certs.ModeCertManager:
		check := &certs.CertManagerCheck{Reader: mgr.GetAPIReader(), Namespace: c.namespace, Certificate: c.certManagerCertificate}
		if err := mgr.Add(check); err != nil {
			return fmt.Errorf("add cert-manager check: %w", err)
		}
		if err := mgr.AddReadyzCheck("cert-manager", check.ReadyCheck()); err != nil {
			return fmt.Errorf("add cert-manager ready check: %w", err)
		}
	}
	return nil
}
