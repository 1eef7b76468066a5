//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The e2e cluster runs a real cert-manager (issue 47): its controller and
// cainjector, built from the released module by make cert-manager-tools and
// installed in namespace cert-manager by hack/cluster/certmanager.sh when
// the cluster's cert mode is cert-manager (CERT_MODE, the default of make
// e2e). Then the operator is installed from config/default: cert-manager
// issues its webhook serving certificate and cainjector injects the CA.
// Listener certificates are issued by a CA ClusterIssuer of that same
// cert-manager (ensureListenerCA). Nothing stands in for cert-manager.

const (
	certModeCertManager = "cert-manager"
	certManagerNS       = "cert-manager"
	// What config/certmanager creates.
	servingCertificate = "listener-operator-serving-cert"
	servingSecret      = "listener-operator-webhook-tls"
	caCertificate      = "listener-operator-ca"
	// The ClusterIssuer the Listener certificate tests use.
	listenerCA = "e2e-listener-ca"
)

// operatorCertMode is the --cert-mode of the installed operator.
func operatorCertMode(t *testing.T, ctx context.Context) string {
	t.Helper()
	var dep appsv1.Deployment
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator"}, &dep); err != nil {
		t.Fatalf("read the operator's Deployment: %v", err)
	}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if m, ok := strings.CutPrefix(a, "--cert-mode="); ok {
			return m
		}
	}
	return ""
}

// requireCertManager skips a test that needs cert-manager on a cluster
// whose operator runs the self-signed mode (CERT_MODE=self-signed).
func requireCertManager(t *testing.T, ctx context.Context) {
	t.Helper()
	if m := operatorCertMode(t, ctx); m != certModeCertManager {
		t.Skipf("the operator runs --cert-mode=%s: this test needs the cluster's cert-manager (make e2e CERT_MODE=cert-manager, the default)", m)
	}
}

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

// ensureListenerCA makes (once; kept between tests and runs, like classes)
// a CA of the cluster's cert-manager for Listener certificates: a
// self-signed ClusterIssuer, a CA Certificate in namespace cert-manager
// issued by it, and the CA ClusterIssuer listenerCA that signs with it. It
// returns the CA certificate a client verifies against.
func ensureListenerCA(t *testing.T, ctx context.Context, cm client.Client) *x509.CertPool {
	t.Helper()
	objs := []client.Object{
		&cmv1.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: "e2e-selfsigned"}, Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{SelfSigned: &cmv1.SelfSignedIssuer{}}}},
		&cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: certManagerNS, Name: listenerCA}, Spec: cmv1.CertificateSpec{
			IsCA: true, CommonName: listenerCA, SecretName: listenerCA,
			PrivateKey: &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyNever},
			IssuerRef:  cmmeta.IssuerReference{Kind: cmv1.ClusterIssuerKind, Name: "e2e-selfsigned"},
		}},
		&cmv1.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: listenerCA}, Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{CA: &cmv1.CAIssuer{SecretName: listenerCA}}}},
	}
	for _, o := range objs {
		if err := cm.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	eventually(t, ctx, 2*time.Minute, "ClusterIssuer "+listenerCA+" Ready", func(ctx context.Context) (bool, string) {
		var ci cmv1.ClusterIssuer
		if err := cm.Get(ctx, client.ObjectKey{Name: listenerCA}, &ci); err != nil {
			return false, err.Error()
		}
		for _, c := range ci.Status.Conditions {
			if c.Type == cmv1.IssuerConditionReady {
				return c.Status == cmmeta.ConditionTrue, c.Reason + ": " + c.Message
			}
		}
		return false, "no Ready condition"
	})
	return caPool(t, secretData(t, ctx, certManagerNS, listenerCA, "ca.crt"))
}

// certificateReady is the Ready condition of a Certificate when it is True
// for the Certificate's generation, else why not.
func certificateReady(ctx context.Context, cm client.Client, ns, name string) (*cmv1.Certificate, string) {
	var cert cmv1.Certificate
	if err := cm.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cert); err != nil {
		return nil, err.Error()
	}
	for _, c := range cert.Status.Conditions {
		if c.Type == cmv1.CertificateConditionReady {
			if c.Status == cmmeta.ConditionTrue && c.ObservedGeneration == cert.Generation {
				return &cert, ""
			}
			return nil, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return nil, "no Ready condition"
}

// markForIssuance asks cert-manager to issue a Certificate now, as
// `cmctl renew` does: the Issuing condition, set by hand.
func markForIssuance(t *testing.T, ctx context.Context, cm client.Client, ns, name string) {
	t.Helper()
	var cert cmv1.Certificate
	if err := cm.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cert); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cert.Status.Conditions = append(cert.Status.Conditions, cmv1.CertificateCondition{
		Type: cmv1.CertificateConditionIssuing, Status: cmmeta.ConditionTrue, Reason: "ManuallyTriggered",
		Message: "issuance forced by the e2e test", LastTransitionTime: &now, ObservedGeneration: cert.Generation,
	})
	if err := cm.Status().Update(ctx, &cert); err != nil {
		t.Fatalf("mark Certificate %s/%s for issuance: %v", ns, name, err)
	}
}

// secretData reads one key of a Secret.
func secretData(t *testing.T, ctx context.Context, ns, name, key string) []byte {
	t.Helper()
	var s corev1.Secret
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatalf("read Secret %s/%s: %v", ns, name, err)
	}
	return s.Data[key]
}

func caPool(t *testing.T, pemData []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("no CA certificate in %d bytes", len(pemData))
	}
	return pool
}

var netDialer = net.Dialer{Timeout: 3 * time.Second}

// servedLeaf is the certificate an operator pod serves on its webhook port.
func servedLeaf(p corev1.Pod) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&netDialer, "tcp", p.Status.PodIP+":9443", &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
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
