//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// webhookService is the name the API server checks on the webhook's
// serving certificate.
const webhookService = "listener-operator-webhook." + operatorNamespace + ".svc"

// TestWebhookCertificateFromCertManager: the webhook serving certificate the
// API server trusts was issued by the cluster's cert-manager from the CA
// config/certmanager creates: the serving Certificate is Ready, every
// replica serves a certificate whose issuer is that CA and that verifies
// against it for the Service's name, and cainjector put exactly that CA
// into every webhook of both configurations.
func TestWebhookCertificateFromCertManager(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	cm := certManagerClient(t)
	eventually(t, ctx, time.Minute, "the serving Certificate is Ready", func(ctx context.Context) (bool, string) {
		cert, why := certificateReady(ctx, cm, operatorNamespace, servingCertificate)
		return cert != nil, why
	})
	caPEM := secretData(t, ctx, operatorNamespace, caCertificate, "ca.crt")
	ca, err := parseLeaf(caPEM)
	if err != nil {
		t.Fatalf("the CA Secret %s: %v", caCertificate, err)
	}
	if !ca.IsCA || ca.Subject.CommonName != caCertificate {
		t.Fatalf("the CA Secret holds %q (CA %v), want the CA Certificate %s", ca.Subject, ca.IsCA, caCertificate)
	}
	for _, p := range operatorPods(t, ctx) {
		leaf, err := servedLeaf(p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if !bytes.Equal(leaf.RawIssuer, ca.RawSubject) {
			t.Errorf("%s serves a certificate issued by %q, want the CA %q", p.Name, leaf.Issuer, ca.Subject)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: caPool(t, caPEM), DNSName: webhookService}); err != nil {
			t.Errorf("%s serves a certificate that does not verify against the CA for %s: %v", p.Name, webhookService, err)
		}
		t.Logf("%s serves %q, issued by %q, valid until %s", p.Name, sans(leaf), leaf.Issuer, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	for kind, bundles := range caBundles(t, ctx) {
		for i, b := range bundles {
			if err := bundleOfCA(b, ca); err != nil {
				t.Errorf("%s webhook %d: %v (cainjector)", kind, i, err)
			}
		}
	}
}

// bundleOfCA says whether a caBundle, as cainjector writes it, holds ca and
// nothing but certificates of the CA Certificate. cainjector (cert-manager
// v1.21, CAInjectorMerging, GA) appends a re-issued CA to the caBundle and
// keeps the previous one until it expires, so a bundle may hold several.
func bundleOfCA(bundle []byte, ca *x509.Certificate) error {
	var found bool
	var n int
	for rest := bundle; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("caBundle certificate %d: %v", n, err)
		}
		if !c.IsCA || c.Subject.CommonName != ca.Subject.CommonName {
			return fmt.Errorf("caBundle certificate %d is %q (CA %v), not a certificate of the CA %q", n, c.Subject, c.IsCA, ca.Subject)
		}
		found = found || bytes.Equal(c.Raw, ca.Raw)
	}
	if !found {
		return fmt.Errorf("the caBundle's %d certificates do not include the CA's ca.crt (serial %s)", n, ca.SerialNumber)
	}
	return nil
}

// caBundles is the caBundle of every webhook of both configurations.
func caBundles(t *testing.T, ctx context.Context) map[string][][]byte {
	t.Helper()
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.client.Get(ctx, client.ObjectKey{Name: "listener-operator-mutating"}, &m); err != nil {
		t.Fatal(err)
	}
	if err := k8s.client.Get(ctx, client.ObjectKey{Name: "listener-operator-validating"}, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, w := range m.Webhooks {
		out["mutating"] = append(out["mutating"], w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out["validating"] = append(out["validating"], w.ClientConfig.CABundle)
	}
	return out
}

// listenerProbe starts the probe of TestCARotationRefusesNothing: 4 clients
// dry-run-creating Listeners of a ClusterIP class through the fail-closed
// validating webhook.
func listenerProbe(t *testing.T, ctx context.Context, ns string) *admissionProbe {
	t.Helper()
	class := listenerClass("ca-rotation", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	ensureClass(t, ctx, class)
	p := startAdmissionProbe(ctx, 4, 100*time.Millisecond, func(c, i int) client.Object {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d-%d", c, i)},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class.Name), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	})
	t.Cleanup(p.Stop)
	p.waitAnswers(t, ctx, 4, "before the disturbance")
	return p
}

// refusedNothing stops the probe and fails the test if any admission failed.
func refusedNothing(t *testing.T, p *admissionProbe, what string) {
	t.Helper()
	p.Stop()
	_, admitted, failures := p.counts()
	t.Logf("%d dry-run creates admitted %s", admitted, what)
	if len(failures) > 0 || admitted == 0 {
		t.Errorf("%d requests failed %s (%d admitted), e.g. %v", len(failures), what, admitted, failures[:min(len(failures), 3)])
	}
}

// everyReplicaServes waits until every operator pod serves a certificate
// for which ok is true (kubelet updates the mounted Secret within about a
// minute; the operator reloads it).
func everyReplicaServes(t *testing.T, ctx context.Context, what string, ok func(*x509.Certificate) error) {
	t.Helper()
	eventually(t, ctx, 3*time.Minute, "every replica serves "+what, func(ctx context.Context) (bool, string) {
		for _, p := range operatorPods(t, ctx) {
			leaf, err := servedLeaf(p)
			if err == nil {
				err = ok(leaf)
			}
			if err != nil {
				return false, p.Name + ": " + err.Error()
			}
		}
		return true, ""
	})
}

// TestCertManagerRenewalRefusesNothing: cert-manager renews the serving
// certificate (forced, as `cmctl renew` does) while 4 clients are admitted
// through the fail-closed webhook; every replica ends serving the new
// certificate and no request is refused.
func TestCertManagerRenewalRefusesNothing(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	cm := certManagerClient(t)
	old, err := parseLeaf(secretData(t, ctx, operatorNamespace, servingSecret, corev1.TLSCertKey))
	if err != nil {
		t.Fatal(err)
	}
	probe := listenerProbe(t, ctx, namespace(t, ctx, "renew"))
	markForIssuance(t, ctx, cm, operatorNamespace, servingCertificate)
	var renewed *x509.Certificate
	eventually(t, ctx, 2*time.Minute, "cert-manager writes a renewed serving certificate", func(ctx context.Context) (bool, string) {
		if _, why := certificateReady(ctx, cm, operatorNamespace, servingCertificate); why != "" {
			return false, why
		}
		renewed, err = parseLeaf(secretData(t, ctx, operatorNamespace, servingSecret, corev1.TLSCertKey))
		if err != nil {
			return false, err.Error()
		}
		return renewed.SerialNumber.Cmp(old.SerialNumber) != 0, "serial " + renewed.SerialNumber.String()
	})
	everyReplicaServes(t, ctx, "the renewed certificate", func(leaf *x509.Certificate) error {
		if leaf.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
			return fmt.Errorf("serves serial %s, want %s", leaf.SerialNumber, renewed.SerialNumber)
		}
		return nil
	})
	probe.waitAnswers(t, ctx, 100, "once every replica serves the renewed certificate")
	refusedNothing(t, probe, "during the renewal")
}

// TestCertManagerCARotationRefusesNothing: the CA Certificate is re-issued
// by cert-manager; cainjector adds the new CA certificate to every
// caBundle while the replicas still serve the certificate signed before;
// no request is refused, and the re-issued CA has the same key
// (privateKey.rotationPolicy: Never in config/certmanager; cert-manager's
// default since 1.18 is Always). cainjector v1.21 keeps the previous CA in
// the caBundle next to the new one (CAInjectorMerging), so admissions hold
// with either policy on this version; the kept key is what makes the
// serving Secret's ca.crt, which still names the previous CA, verify the
// new chain too.
func TestCertManagerCARotationRefusesNothing(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	cm := certManagerClient(t)
	oldCA, err := parseLeaf(secretData(t, ctx, operatorNamespace, caCertificate, corev1.TLSCertKey))
	if err != nil {
		t.Fatal(err)
	}
	probe := listenerProbe(t, ctx, namespace(t, ctx, "ca-reissue"))
	markForIssuance(t, ctx, cm, operatorNamespace, caCertificate)
	var newPEM []byte
	eventually(t, ctx, 2*time.Minute, "cert-manager re-issues the CA and cainjector injects it into every webhook", func(ctx context.Context) (bool, string) {
		if _, why := certificateReady(ctx, cm, operatorNamespace, caCertificate); why != "" {
			return false, why
		}
		newPEM = secretData(t, ctx, operatorNamespace, caCertificate, "ca.crt")
		ca, err := parseLeaf(newPEM)
		if err != nil {
			return false, err.Error()
		}
		if ca.SerialNumber.Cmp(oldCA.SerialNumber) == 0 {
			return false, "the CA is not re-issued yet"
		}
		for kind, bundles := range caBundles(t, ctx) {
			for i, b := range bundles {
				if err := bundleOfCA(b, ca); err != nil {
					return false, fmt.Sprintf("%s webhook %d: %v", kind, i, err)
				}
			}
		}
		return true, ""
	})
	probe.waitAnswers(t, ctx, 100, "once every webhook has the new CA")
	refusedNothing(t, probe, "during the CA re-issue")
	newCA, _ := parseLeaf(newPEM)
	if !bytes.Equal(newCA.RawSubjectPublicKeyInfo, oldCA.RawSubjectPublicKeyInfo) {
		t.Errorf("the re-issued CA has a new key: the CA Certificate's privateKey.rotationPolicy is not Never")
	}
	everyReplicaServes(t, ctx, "a certificate that the new CA verifies", func(leaf *x509.Certificate) error {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: caPool(t, newPEM), DNSName: webhookService})
		return err
	})
}

// readyz is an operator pod's /readyz?verbose answer.
func readyz(ctx context.Context, p corev1.Pod) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(p.Status.PodIP, "8081")+"/readyz?verbose", nil)
	if err != nil {
		return "", err
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return fmt.Sprintf("%d %s", resp.StatusCode, body), err
}

// scaleCertManager sets both cert-manager Deployments' replicas and waits
// until they run (up) or their pods are gone (0).
func scaleCertManager(t *testing.T, ctx context.Context, replicas int) {
	t.Helper()
	for _, d := range []string{"cert-manager", "cert-manager-cainjector"} {
		k8s.kubectlOK(t, ctx, "", "scale", "-n", certManagerNS, "deployment/"+d, fmt.Sprintf("--replicas=%d", replicas))
		if replicas > 0 {
			k8s.kubectlOK(t, ctx, "", "rollout", "status", "-n", certManagerNS, "deployment/"+d, "--timeout=3m")
		}
	}
	if replicas > 0 {
		return
	}
	eventually(t, ctx, 2*time.Minute, "cert-manager's pods are gone", func(ctx context.Context) (bool, string) {
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(certManagerNS)); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
}

// shortDuration is the serving certificate's lifetime in
// TestCertManagerDownWebhooksKeepServing. cert-manager refuses less than an
// hour only in its own admission webhook, which is not built here
// (hack/certmanager): the controller issues what the spec asks. The test
// relies on that.
const shortDuration, shortRenewBefore = 4 * time.Minute, 2 * time.Minute

// TestCertManagerDownWebhooksKeepServing: with cert-manager's controller
// and cainjector scaled to 0, the webhooks keep serving the certificate
// they have, past its renewal time, and every replica stays Ready; only
// once that certificate really expires does /readyz fail and the operator
// say what is missing (the Certificate expired and was not renewed).
func TestCertManagerDownWebhooksKeepServing(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	cm := certManagerClient(t)
	var orig cmv1.Certificate
	if err := cm.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: servingCertificate}, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restoreCertManager(t, context.WithoutCancel(ctx), cm, orig.Spec) })

	// A serving certificate of a few minutes, issued while cert-manager runs.
	short := orig.DeepCopy()
	short.Spec.Duration = &metav1.Duration{Duration: shortDuration}
	short.Spec.RenewBefore = &metav1.Duration{Duration: shortRenewBefore}
	if err := cm.Update(ctx, short); err != nil {
		t.Fatal(err)
	}
	var leaf *x509.Certificate
	eventually(t, ctx, 2*time.Minute, "cert-manager issues a "+shortDuration.String()+" serving certificate", func(ctx context.Context) (bool, string) {
		if _, why := certificateReady(ctx, cm, operatorNamespace, servingCertificate); why != "" {
			return false, why
		}
		var err error
		if leaf, err = parseLeaf(secretData(t, ctx, operatorNamespace, servingSecret, corev1.TLSCertKey)); err != nil {
			return false, err.Error()
		}
		life := leaf.NotAfter.Sub(leaf.NotBefore)
		return life <= shortDuration+time.Minute, "lifetime " + life.String()
	})
	scaleCertManager(t, ctx, 0)
	probe := listenerProbe(t, ctx, namespace(t, ctx, "cm-down"))
	everyReplicaServes(t, ctx, "the short certificate", func(got *x509.Certificate) error {
		if got.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
			return fmt.Errorf("serves serial %s, want %s", got.SerialNumber, leaf.SerialNumber)
		}
		return nil
	})
	// Past the renewal time nobody renews; the replicas stay Ready.
	renewal := leaf.NotAfter.Add(-shortRenewBefore)
	waitUntil(t, ctx, renewal.Add(15*time.Second))
	for _, p := range operatorPods(t, ctx) {
		if got, err := readyz(ctx, p); err != nil || !strings.HasPrefix(got, "200 ") {
			t.Errorf("%s past the renewal time, before expiry: /readyz %q %v, want ready", p.Name, got, err)
		}
	}
	// Until just before expiry, nothing is refused.
	waitUntil(t, ctx, leaf.NotAfter.Add(-10*time.Second))
	refusedNothing(t, probe, "with cert-manager down, before the certificate expires")

	// Expired: every replica says so.
	eventually(t, ctx, 2*time.Minute, "every replica's /readyz fails on the expired certificate", func(ctx context.Context) (bool, string) {
		for _, p := range operatorPods(t, ctx) {
			got, err := readyz(ctx, p)
			if err != nil {
				return false, p.Name + ": " + err.Error()
			}
			if !strings.Contains(got, "[-]cert-manager failed") || !strings.Contains(got, "[-]webhook-certificate failed") {
				return false, p.Name + ": " + got
			}
		}
		return true, ""
	})
	want := "cert-manager Certificate " + operatorNamespace + "/" + servingCertificate + " expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)
	for _, p := range operatorPods(t, ctx) {
		logs := k8s.kubectlOK(t, ctx, "", "logs", "-n", operatorNamespace, p.Name, "-c", "manager", "--since=5m")
		if !strings.Contains(logs, want) {
			t.Errorf("%s's log does not say %q", p.Name, want)
		}
	}
}

// waitUntil sleeps until at (or the test's end).
func waitUntil(t *testing.T, ctx context.Context, at time.Time) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(time.Until(at)):
	}
}

// restoreCertManager puts the serving Certificate's spec back, scales
// cert-manager up again and waits until the webhooks answer with a
// certificate it issued.
func restoreCertManager(t *testing.T, ctx context.Context, cm client.Client, spec cmv1.CertificateSpec) {
	t.Helper()
	var cert cmv1.Certificate
	if err := cm.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: servingCertificate}, &cert); err != nil {
		t.Fatal(err)
	}
	cert.Spec = spec
	if err := cm.Update(ctx, &cert); err != nil {
		t.Fatalf("restore the serving Certificate: %v", err)
	}
	scaleCertManager(t, ctx, 1)
	eventually(t, ctx, 2*time.Minute, "cert-manager re-issues the serving certificate", func(ctx context.Context) (bool, string) {
		c, why := certificateReady(ctx, cm, operatorNamespace, servingCertificate)
		if c == nil {
			return false, why
		}
		return c.Status.NotAfter != nil && time.Until(c.Status.NotAfter.Time) > time.Hour, "not after " + c.Status.NotAfter.String()
	})
	// Every replica Ready again (its /readyz failed on the expired
	// certificate, which took it out of the webhook Service's endpoints)
	// before the next test admits anything: answers from one replica alone
	// let the next tests meet a Service with no endpoint.
	eventually(t, ctx, 3*time.Minute, "every replica's /readyz answers 200 with the new certificate", func(ctx context.Context) (bool, string) {
		for _, p := range operatorPods(t, ctx) {
			if got, err := readyz(ctx, p); err != nil || !strings.HasPrefix(got, "200 ") {
				return false, fmt.Sprintf("%s: %q %v", p.Name, got, err)
			}
			if !isReady(&p) {
				return false, p.Name + " is not Ready yet"
			}
		}
		return true, ""
	})
	webhooksAnswer(t, ctx)
}
