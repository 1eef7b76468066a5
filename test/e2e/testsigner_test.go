//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// cert-manager's controller cannot be built here (its cmd/ modules are not
// on the module proxy, see FACTS), so the certificate tests install its
// CRDs (from the module its API types come from, as the envtest of package
// reconcile does) and run testSigner in the test process in its place.

// certManagerCRDs are the cert-manager CRDs the operator's certificate
// controller uses (the Certificate) or names (the issuers).
var certManagerCRDs = []string{"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"}

// certManagerClient is a client of the e2e cluster that knows
// cert-manager's types.
func certManagerClient(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", k8s.kubeconfig)
	if err != nil {
		t.Fatalf("load %s: %v", k8s.kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, cmv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// removeCertManagerCRDs deletes cert-manager's CRDs (and so every
// Certificate) and waits until they are gone.
func removeCertManagerCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	args := append([]string{"delete", "crd", "--ignore-not-found", "--wait", "--timeout=2m"}, certManagerCRDs...)
	k8s.kubectlOK(t, ctx, "", args...)
}

// installCertManagerCRDs installs cert-manager's CRDs, waits until they are
// served and removes them when the test ends.
func installCertManagerCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locate the cert-manager module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	args := []string{"apply", "--server-side"}
	for _, crd := range certManagerCRDs {
		plural, group, _ := strings.Cut(crd, ".")
		args = append(args, "-f", filepath.Join(dir, group+"_"+plural+".yaml"))
	}
	t.Cleanup(func() { removeCertManagerCRDs(t, context.WithoutCancel(ctx)) })
	k8s.kubectlOK(t, ctx, "", args...)
	k8s.kubectlOK(t, ctx, "", append([]string{"wait", "--for=condition=Established", "--timeout=1m"}, prefixAll("crd/", certManagerCRDs)...)...)
}

func prefixAll(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// testSigner does for the Certificates of one namespace that name its
// issuer what cert-manager does: it writes each Certificate's
// spec.secretName Secret (type kubernetes.io/tls: tls.crt, tls.key and
// ca.crt, signed by its own test CA, whose SANs are exactly the
// Certificate's dnsNames and ipAddresses) and sets the Certificate's Ready
// condition for its generation, again whenever the spec changes.
type testSigner struct {
	c      client.Client
	ns     string
	issuer string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte

	mu     sync.Mutex
	issued int // certificates signed, for the test's log
}

// startSigner starts a testSigner in a goroutine that stops when the test
// ends.
func startSigner(t *testing.T, ctx context.Context, c client.Client, ns, issuer string) *testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e test signer " + issuer},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	s := &testSigner{c: c, ns: ns, issuer: issuer, ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var lastErr string
		for {
			if err := s.signAll(ctx); err != nil && ctx.Err() == nil && err.Error() != lastErr {
				lastErr = err.Error()
				t.Logf("test signer: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		t.Logf("test signer: %d certificate(s) signed", s.signed())
	})
	return s
}

func (s *testSigner) signed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

// signAll signs every Certificate of the namespace that names the signer
// and is not Ready for its current generation.
func (s *testSigner) signAll(ctx context.Context) error {
	var certs cmv1.CertificateList
	if err := s.c.List(ctx, &certs, client.InNamespace(s.ns)); err != nil {
		return fmt.Errorf("list certificates: %w", err)
	}
	for i := range certs.Items {
		cert := &certs.Items[i]
		if cert.Spec.IssuerRef.Name != s.issuer || readyFor(cert) {
			continue
		}
		if err := s.sign(ctx, cert); err != nil {
			return fmt.Errorf("certificate %s: %w", cert.Name, err)
		}
	}
	return nil
}

func readyFor(cert *cmv1.Certificate) bool {
	for _, c := range cert.Status.Conditions {
		if c.Type == cmv1.CertificateConditionReady {
			return c.Status == cmmeta.ConditionTrue && c.ObservedGeneration == cert.Generation
		}
	}
	return false
}

func (s *testSigner) sign(ctx context.Context, cert *cmv1.Certificate) error {
	var ips []net.IP
	for _, a := range cert.Spec.IPAddresses {
		ip := net.ParseIP(a)
		if ip == nil {
			return fmt.Errorf("spec.ipAddresses: %q is not an IP address", a)
		}
		ips = append(ips, ip)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	notBefore, notAfter := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: serial, NotBefore: notBefore, NotAfter: notAfter,
		DNSNames: cert.Spec.DNSNames, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, &key.PublicKey, s.caKey)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	data := map[string][]byte{
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"ca.crt":                s.caPEM,
	}
	annotations := map[string]string{
		cmv1.CertificateNameKey: cert.Name, cmv1.IssuerNameAnnotationKey: s.issuer,
		cmv1.AltNamesAnnotationKey: strings.Join(cert.Spec.DNSNames, ","), cmv1.IPSANAnnotationKey: strings.Join(cert.Spec.IPAddresses, ","),
	}
	secret := &corev1.Secret{}
	err = s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: cert.Spec.SecretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cert.Spec.SecretName, Namespace: s.ns, Annotations: annotations}, Type: corev1.SecretTypeTLS, Data: data}
		if err := s.c.Create(ctx, secret); err != nil {
			return fmt.Errorf("create secret %s: %w", cert.Spec.SecretName, err)
		}
	case err != nil:
		return fmt.Errorf("get secret %s: %w", cert.Spec.SecretName, err)
	default:
		secret.Annotations, secret.Data = annotations, data
		if err := s.c.Update(ctx, secret); err != nil {
			return fmt.Errorf("update secret %s: %w", cert.Spec.SecretName, err)
		}
	}
	revision := 1
	if cert.Status.Revision != nil {
		revision = *cert.Status.Revision + 1
	}
	cert.Status = cmv1.CertificateStatus{
		Conditions: []cmv1.CertificateCondition{{
			Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready",
			Message: "Certificate is up to date and has not expired", ObservedGeneration: cert.Generation,
			LastTransitionTime: &metav1.Time{Time: time.Now()},
		}},
		NotBefore: &metav1.Time{Time: notBefore}, NotAfter: &metav1.Time{Time: notAfter}, Revision: &revision,
	}
	if err := s.c.Status().Update(ctx, cert); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	s.mu.Lock()
	s.issued++
	s.mu.Unlock()
	return nil
}

// parseLeaf reads the first certificate of a PEM bundle.
func parseLeaf(pemData []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemData)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate in %d bytes", len(pemData))
	}
	return x509.ParseCertificate(block.Bytes)
}

// sans lists a certificate's DNS and IP subject alternative names.
func sans(cert *x509.Certificate) []string {
	out := append([]string(nil), cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}
