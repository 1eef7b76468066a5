package certs

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// certManagerCRD is cert-manager's own Certificate CRD, shipped in the
// module the API types come from.
func certManagerCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locate the cert-manager module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds", "cert-manager.io_certificates.yaml")
}

func TestCertManagerCheckExplainsWhatIsMissing(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	scheme := testenv.Scheme()
	if err := cmv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := "certs-cert-manager"
	newNamespace(t, ns)
	check := &CertManagerCheck{Reader: c, Namespace: ns, Certificate: DefaultCertificateName}

	expect := func(t *testing.T, want string) {
		t.Helper()
		err := check.Check(ctx)
		if want == "" {
			if err != nil {
				t.Fatalf("check: %v, want ready", err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("check: %v, want a message containing %q", err, want)
		}
	}

	expect(t, "cert-manager is not installed: the API server does not serve certificates.cert-manager.io")
	if err := check.ReadyCheck()(&http.Request{}); err == nil || !strings.Contains(err.Error(), "not checked yet") {
		t.Errorf("readiness before the first check: %v", err)
	}

	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{certManagerCRD(t)}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install cert-manager's Certificate CRD: %v", err)
	}
	expect(t, "cert-manager Certificate certs-cert-manager/listener-operator-serving-cert does not exist: apply config/certmanager")

	cert := &cmv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: DefaultCertificateName},
		Spec: cmv1.CertificateSpec{
			SecretName: "listener-operator-webhook-cert",
			DNSNames:   ServiceHosts("listener-operator-webhook", ns, "cluster.local")[2:],
			IssuerRef:  cmmeta.IssuerReference{Name: "listener-operator-ca", Kind: "Issuer"},
		},
	}
	if err := c.Create(ctx, cert); err != nil {
		t.Fatalf("create Certificate: %v", err)
	}
	expect(t, "has no Ready condition: cert-manager has not processed it")

	setReady := func(status cmmeta.ConditionStatus, reason, message string) {
		t.Helper()
		cert.Status.Conditions = []cmv1.CertificateCondition{{
			Type: cmv1.CertificateConditionReady, Status: status, Reason: reason, Message: message,
			ObservedGeneration: cert.Generation, LastTransitionTime: &metav1.Time{Time: time.Now()},
		}}
		notAfter := metav1.NewTime(time.Now().Add(time.Hour))
		cert.Status.NotAfter = &notAfter
		if err := c.Status().Update(ctx, cert); err != nil {
			t.Fatalf("update Certificate status: %v", err)
		}
	}
	setReady(cmmeta.ConditionFalse, "DoesNotExist", `Issuer "listener-operator-ca" not found`)
	expect(t, `is not Ready: DoesNotExist: Issuer "listener-operator-ca" not found`)

	setReady(cmmeta.ConditionTrue, "Ready", "Certificate is up to date and has not expired")
	expect(t, "")

	// The runnable keeps the last outcome for /readyz.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = check.Start(runCtx) }()
	eventually(t, "readiness after the check ran", func() error { return check.ReadyCheck()(&http.Request{}) })
	cancel()
	<-done
}

func TestCertificateReady(t *testing.T) {
	now := time.Now()
	gen := int64(3)
	cond := func(s cmmeta.ConditionStatus, observed int64) []cmv1.CertificateCondition {
		return []cmv1.CertificateCondition{
			{Type: cmv1.CertificateConditionIssuing, Status: cmmeta.ConditionFalse},
			{Type: cmv1.CertificateConditionReady, Status: s, Reason: "Why", Message: "because", ObservedGeneration: observed},
		}
	}
	past := metav1.NewTime(now.Add(-time.Minute))
	future := metav1.NewTime(now.Add(time.Hour))
	tests := []struct {
		name   string
		status cmv1.CertificateStatus
		want   string
	}{
		{"ready", cmv1.CertificateStatus{Conditions: cond(cmmeta.ConditionTrue, gen), NotAfter: &future}, ""},
		{"no conditions", cmv1.CertificateStatus{}, "has no Ready condition"},
		{"not ready", cmv1.CertificateStatus{Conditions: cond(cmmeta.ConditionFalse, gen)}, "is not Ready: Why: because (kubectl describe certificate -n ns c)"},
		{"unknown", cmv1.CertificateStatus{Conditions: cond(cmmeta.ConditionUnknown, gen)}, "is not Ready"},
		{"stale", cmv1.CertificateStatus{Conditions: cond(cmmeta.ConditionTrue, gen-1), NotAfter: &future}, "has not reissued it yet"},
		{"expired", cmv1.CertificateStatus{Conditions: cond(cmmeta.ConditionTrue, gen), NotAfter: &past}, "expired at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: gen}, Status: tt.status}
			err := CertificateReady(c, now)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want ready", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
