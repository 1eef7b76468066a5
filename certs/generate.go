package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	"github.com/listener-operator/listener-operator/api/names"
)

// Keys of the self-signed mode's Secret. tls.crt and tls.key are what the
// webhook server serves; ca.crt goes into the webhook configurations'
// caBundle.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
	// KeyPreviousCACert holds the CA a new CA replaced, while replicas may
	// still serve a certificate it signed: the caBundle trusts both until
	// every replica serves one of the new CA (docs/install.md).
	KeyPreviousCACert = "previous-ca.crt"
)

// DefaultCAValidity is the lifetime of the self-signed CA. It is long
// because a new CA means a new caBundle, and the API server rejects calls
// signed by the new CA until every webhook configuration has it.
const DefaultCAValidity = 10 * 365 * 24 * time.Hour

// DefaultServingValidity is the default lifetime of a serving certificate.
const DefaultServingValidity = 90 * 24 * time.Hour

// backdate covers clocks that lag behind the leader's a little.
const backdate = 5 * time.Minute

// Bundle is the PEM content of the self-signed mode's Secret.
type Bundle struct {
	CACert, CAKey           []byte
	ServingCert, ServingKey []byte
	// PreviousCACert is the CA that CACert replaced, trusted until every
	// replica serves a certificate of the new one (empty otherwise).
	PreviousCACert []byte
}

// BundleFromData reads a Bundle from Secret data; missing keys stay empty.
func BundleFromData(data map[string][]byte) Bundle {
	return Bundle{
		CACert: data[KeyCACert], CAKey: data[KeyCAKey],
		ServingCert: data[KeyTLSCert], ServingKey: data[KeyTLSKey],
		PreviousCACert: data[KeyPreviousCACert],
	}
}

// Data is the Bundle as Secret data (without previous-ca.crt when there is
// no previous CA).
func (b Bundle) Data() map[string][]byte {
	d := map[string][]byte{
		KeyCACert: b.CACert, KeyCAKey: b.CAKey,
		KeyTLSCert: b.ServingCert, KeyTLSKey: b.ServingKey,
	}
	if len(b.PreviousCACert) > 0 {
		d[KeyPreviousCACert] = b.PreviousCACert
	}
	return d
}

// Equal reports whether two bundles hold the same bytes.
func (b Bundle) Equal(o Bundle) bool {
	return bytes.Equal(b.CACert, o.CACert) && bytes.Equal(b.CAKey, o.CAKey) &&
		bytes.Equal(b.ServingCert, o.ServingCert) && bytes.Equal(b.ServingKey, o.ServingKey) &&
		bytes.Equal(b.PreviousCACert, o.PreviousCACert)
}

// TrustBundle is what goes into the webhook configurations' caBundle: the
// CA, and the previous CA while replicas may still serve its certificates.
func (b Bundle) TrustBundle() []byte {
	if len(b.PreviousCACert) == 0 {
		return b.CACert
	}
	out := append(bytes.TrimRight(slices.Clone(b.CACert), "\n"), '\n')
	return append(out, b.PreviousCACert...)
}

// ServiceHosts are the names the API server uses to reach a webhook Service:
// it verifies the certificate against <svc>.<ns>.svc; the other forms cover
// clients that call the Service by a longer or shorter name, the longest in
// the cluster's domain (names.ServiceDNSNames).
func ServiceHosts(service, namespace, clusterDomain string) []string {
	return names.ServiceDNSNames(service, namespace, clusterDomain)
}

// RotationTime is when a certificate valid from notBefore to notAfter should
// be replaced: after two thirds of its lifetime, as cert-manager does.
func RotationTime(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(notAfter.Sub(notBefore) * 2 / 3)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n, nil
}

// GenerateCA creates a self-signed CA certificate and its key, valid from
// now (less a few minutes for clock skew) for validity.
func GenerateCA(commonName string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if validity <= backdate {
		return nil, nil, fmt.Errorf("CA validity %s is too short", validity)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// GenerateServing issues a serving certificate for hosts (DNS names or IP
// addresses) signed by the CA, valid from now for validity (never beyond the
// CA's own expiry).
func GenerateServing(caCertPEM, caKeyPEM []byte, hosts []string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("a serving certificate needs at least one host name")
	}
	if validity <= backdate {
		return nil, nil, fmt.Errorf("serving certificate validity %s is too short", validity)
	}
	caCert, err := parseCert(caCertPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA certificate: %w", err)
	}
	caKey, err := parseKey(caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA key: %w", err)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign serving certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// ParseCertificate reads the first certificate of a PEM block.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) { return parseCert(certPEM) }

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	if len(certPEM) == 0 {
		return nil, errors.New("empty")
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	if len(keyPEM) == 0 {
		return nil, errors.New("empty")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", key)
	}
	return signer, nil
}

// publicKeysEqual reports whether a certificate belongs to a key.
func publicKeysEqual(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.Public())
}

// Decision says what the self-signed mode must replace, and why.
type Decision struct {
	// NewCA: the CA is missing, unreadable or due; a new CA implies a new
	// serving certificate.
	NewCA bool
	// NewServing: the serving certificate is missing, unreadable, not for
	// these hosts, not signed by the CA or due.
	NewServing bool
	// Reason explains the decision for the log.
	Reason string
	// RotateAt is when the current (or, after renewal, the new) bundle next
	// needs a look; zero when something must be replaced now.
	RotateAt time.Time
}

// Evaluate decides whether the bundle can be kept at time now for hosts.
func Evaluate(b Bundle, hosts []string, now time.Time) Decision {
	caCert, err := parseCert(b.CACert)
	if err != nil {
		return Decision{NewCA: true, NewServing: true, Reason: "CA certificate unreadable: " + err.Error()}
	}
	caKey, err := parseKey(b.CAKey)
	if err != nil {
		return Decision{NewCA: true, NewServing: true, Reason: "CA key unreadable: " + err.Error()}
	}
	if !caCert.IsCA || !publicKeysEqual(caCert, caKey) {
		return Decision{NewCA: true, NewServing: true, Reason: "CA certificate and key do not belong together"}
	}
	caRotate := RotationTime(caCert.NotBefore, caCert.NotAfter)
	if !now.Before(caRotate) {
		return Decision{NewCA: true, NewServing: true, Reason: fmt.Sprintf("CA reached two thirds of its lifetime at %s", caRotate.UTC().Format(time.RFC3339))}
	}
	serving := func(reason string) Decision { return Decision{NewServing: true, Reason: reason} }
	cert, err := parseCert(b.ServingCert)
	if err != nil {
		return serving("serving certificate unreadable: " + err.Error())
	}
	key, err := parseKey(b.ServingKey)
	if err != nil {
		return serving("serving key unreadable: " + err.Error())
	}
	if !publicKeysEqual(cert, key) {
		return serving("serving certificate and key do not belong together")
	}
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		return serving("serving certificate is not signed by the CA")
	}
	for _, h := range hosts {
		if err := cert.VerifyHostname(h); err != nil {
			return serving(fmt.Sprintf("serving certificate does not cover %s", h))
		}
	}
	if now.Before(cert.NotBefore) {
		return serving("serving certificate is not valid yet")
	}
	rotate := RotationTime(cert.NotBefore, cert.NotAfter)
	if !now.Before(rotate) {
		return serving(fmt.Sprintf("serving certificate reached two thirds of its lifetime at %s", rotate.UTC().Format(time.RFC3339)))
	}
	return Decision{Reason: "certificates are valid", RotateAt: minTime(rotate, caRotate)}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// RenewOptions are the parameters of Renew.
type RenewOptions struct {
	// CommonName of a new CA.
	CommonName string
	// Hosts the serving certificate must cover.
	Hosts []string
	// CAValidity and ServingValidity are the lifetimes of new certificates.
	CAValidity, ServingValidity time.Duration
}

// Renew returns the bundle to store at time now: b itself when it is still
// good, otherwise b with a new serving certificate (and a new CA if the CA
// itself is due). The Decision says what happened.
func Renew(b Bundle, opts RenewOptions, now time.Time) (Bundle, Decision, error) {
	d := Evaluate(b, opts.Hosts, now)
	if !d.NewCA && !d.NewServing {
		return b, d, nil
	}
	out := b
	if d.NewCA {
		var err error
		if out.CACert, out.CAKey, err = GenerateCA(opts.CommonName, now, opts.CAValidity); err != nil {
			return b, d, err
		}
		// Replicas serve certificates of the old CA until they copy the
		// new one: keep trusting it (if it is a CA still valid) meanwhile.
		out.PreviousCACert = nil
		if old, err := parseCert(b.CACert); err == nil && old.IsCA && now.Before(old.NotAfter) {
			out.PreviousCACert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: old.Raw})
		}
	}
	var err error
	if out.ServingCert, out.ServingKey, err = GenerateServing(out.CACert, out.CAKey, slices.Clone(opts.Hosts), now, opts.ServingValidity); err != nil {
		return b, d, err
	}
	after := Evaluate(out, opts.Hosts, now)
	if after.NewCA || after.NewServing {
		return b, d, fmt.Errorf("freshly issued certificates are not usable: %s (is the validity too short?)", after.Reason)
	}
	d.RotateAt = after.RotateAt
	return out, d, nil
}
