package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServingProbe tells whether every replica serves a certificate that
// chains to a CA.
type ServingProbe interface {
	// AllServe reports whether every replica's serving certificate chains
	// to caPEM, and if not, which replica does not and why.
	AllServe(ctx context.Context, caPEM []byte) (bool, string, error)
}

// EndpointProbe is the ServingProbe of a webhook Service: it dials every
// ready endpoint of the Service (from its EndpointSlices, read live) and
// checks the certificate each one presents. The API server sends
// admissions to these endpoints only.
type EndpointProbe struct {
	// Reader lists EndpointSlices.
	Reader client.Reader
	// Namespace and Service name the webhook Service.
	Namespace, Service string
	// ServerName is the name the API server verifies (ServiceHosts[0]).
	ServerName string
	// Timeout of one dial (default 3s).
	Timeout time.Duration
	// Addrs, when set, are the replicas' host:port instead of the
	// Service's endpoints (a webhook reached by URL).
	Addrs []string
}

// AllServe implements ServingProbe.
func (p *EndpointProbe) AllServe(ctx context.Context, caPEM []byte) (bool, string, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return false, "", errors.New("the CA is not PEM")
	}
	if len(p.Addrs) > 0 {
		for _, a := range p.Addrs {
			if err := p.check(ctx, a, pool); err != nil {
				return false, a + ": " + err.Error(), nil
			}
		}
		return true, "", nil
	}
	var slices discoveryv1.EndpointSliceList
	if err := p.Reader.List(ctx, &slices, client.InNamespace(p.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: p.Service}); err != nil {
		return false, "", fmt.Errorf("list endpoints of Service %s/%s: %w", p.Namespace, p.Service, err)
	}
	seen := 0
	for _, s := range slices.Items {
		port := int32(0)
		for _, sp := range s.Ports {
			if sp.Port != nil {
				port = *sp.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, true) {
				continue
			}
			for _, addr := range ep.Addresses {
				seen++
				hostPort := net.JoinHostPort(addr, strconv.Itoa(int(port)))
				if err := p.check(ctx, hostPort, pool); err != nil {
					return false, hostPort + ": " + err.Error(), nil
				}
			}
		}
	}
	if seen == 0 {
		return false, "the Service has no ready endpoint", nil
	}
	return true, "", nil
}

// check dials addr and verifies the certificate it presents against pool.
func (p *EndpointProbe) check(ctx context.Context, addr string, pool *x509.CertPool) error {
	d := &tls.Dialer{Config: &tls.Config{
		ServerName: p.ServerName,
		// Verified below against the new CA only: the handshake itself
		// must succeed whichever CA signed the certificate.
		InsecureSkipVerify: true, //nolint:gosec // verified by hand below
		MinVersion:         tls.VersionTLS12,
	}}
	ctx, cancel := context.WithTimeout(ctx, orDefault(p.Timeout, 3*time.Second))
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return errors.New("no certificate presented")
	}
	return VerifyLeaf(certs[0], pool, p.ServerName)
}

// VerifyLeaf checks that leaf chains to a CA in roots and covers host
// ("" skips the host).
func VerifyLeaf(leaf *x509.Certificate, roots *x509.CertPool, host string) error {
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("serving certificate %q does not chain to the CA: %w", leaf.Subject.String(), err)
	}
	return nil
}

// InjectedBundles reads the caBundles of the webhook configurations the
// self-signed mode injects, live (a replica caches no webhook
// configuration): what the API server verifies every replica with.
type InjectedBundles struct {
	Reader               client.Reader
	Mutating, Validating []string
}

// Bundles returns each webhook's caBundle; a configuration that does not
// exist is skipped.
func (i *InjectedBundles) Bundles(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	for _, name := range i.Mutating {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := i.Reader.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read MutatingWebhookConfiguration %s: %w", name, err)
		}
		for _, w := range c.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	for _, name := range i.Validating {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := i.Reader.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", name, err)
		}
		for _, w := range c.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	return out, nil
}
