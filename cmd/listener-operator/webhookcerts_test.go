package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listener-operator/listener-operator/certs"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/webhooks"
)

func TestCertFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--leader-elect=false", "--namespace=ns", "--cert-mode=selfsigned"}, `--cert-mode: unknown certificate mode "selfsigned": use one of self-signed, cert-manager, files`},
		{[]string{"controller", "--leader-elect=false", "--namespace=ns", "--webhook-tls-min-version=1.1"}, "--webhook-tls-min-version: TLS version \"1.1\" is too old"},
		{[]string{"controller", "--leader-elect=false", "--cert-mode=cert-manager"}, "--cert-mode=cert-manager needs the operator's namespace"},
		{[]string{"controller", "--leader-elect=false", "--namespace=ns", "--cert-validity=1m"}, "--cert-validity=1m0s is too short"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 1 {
				t.Errorf("exit code = %d, want 1 (stderr: %s)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", stderr.String(), tt.want)
			}
		})
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestControllerCommandSelfSignedTLS runs `listener-operator controller
// --cert-mode=self-signed` as the selfsigned manifests do, against a real API
// server with the real webhook configurations, and checks what the API
// server will see: the CA in every caBundle and a webhook server that
// presents a certificate for the Service name, chained to that CA, over
// TLS ≥ 1.2 without HTTP/2. The certificate's fully qualified name is in
// the replica's cluster domain (here --cluster-domain), not cluster.local.
func TestControllerCommandSelfSignedTLS(t *testing.T) {
	e := testenv.Require(t, env)
	t.Setenv("KUBECONFIG", e.Kubeconfig)
	ctx, cancel := context.WithCancel(t.Context())

	const ns = "listener-operator"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	root := testenv.RepoRoot()
	for _, args := range [][]string{
		{"apply", "-k", filepath.Join(root, "config", "webhook")},
		{"apply", "-n", ns, "-f", filepath.Join(root, "config", "selfsigned", "secret.yaml")},
	} {
		if out, err := e.Kubectl(ctx, nil, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}

	startedAt := time.Now()
	webhookPort, probePort := freeLoopbackPort(t), freeLoopbackPort(t)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"controller",
			"--namespace=" + ns, "--cert-mode=self-signed", "--cert-validity=1h",
			"--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(webhookPort),
			"--webhook-cert-dir=" + t.TempDir(),
			"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
			"--metrics-bind-address=0", "--shutdown-delay=2s",
			"--cluster-domain=example.test",
		}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("controller exited with %d: %s", code, stderr.String())
			}
		case <-time.After(time.Minute):
			t.Error("controller did not stop")
		}
	})

	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", probePort)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		last = body.String()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("controller never became ready: %s\nstderr: %s", last, stderr.String())
	}
	t.Logf("ready after %s", time.Since(startedAt))
	if !strings.Contains(last, "webhook-certificate ok") {
		t.Errorf("readiness does not include the certificate check:\n%s", last)
	}

	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: certs.DefaultSecretName}, secret); err != nil {
		t.Fatal(err)
	}
	ca := secret.Data[certs.KeyCACert]
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var bundles [][]byte
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: "listener-operator-mutating"}, m); err != nil {
			return false, err
		}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: "listener-operator-validating"}, v); err != nil {
			return false, err
		}
		for _, w := range m.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, w := range v.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, b := range bundles {
			if !bytes.Equal(b, ca) {
				return false, nil
			}
		}
		return len(bundles) > 0, nil
	})
	if err != nil {
		t.Fatalf("not every webhook's caBundle holds the Secret's CA: %v", err)
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))
	// What the API server does for a Service reference: verify against
	// <service>.<namespace>.svc.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "listener-operator-webhook." + ns + ".svc", NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("the API server would not trust the webhook server: %v", err)
	}
	st := conn.ConnectionState()
	conn.Close()
	if st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("negotiated %q, want http/1.1 (HTTP/2 is off by default)", st.NegotiatedProtocol)
	}
	want, _ := certs.ParseCertificate(secret.Data[certs.KeyTLSCert])
	if !st.PeerCertificates[0].Equal(want) {
		t.Error("the webhook server does not present the Secret's serving certificate")
	}
	fqdn := "listener-operator-webhook." + ns + ".svc.example.test"
	if !slices.Contains(want.DNSNames, fqdn) || slices.Contains(want.DNSNames, "listener-operator-webhook."+ns+".svc.cluster.local") {
		t.Errorf("the serving certificate names %v, want %s (the cluster domain) and no name in cluster.local", want.DNSNames, fqdn)
	}
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "listener-operator-webhook." + ns + ".svc", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Error("the webhook server accepted TLS 1.1")
	}

	// Told to stop, the replica fails /readyz and answers admissions on
	// connections it closes, for the shutdown delay; then it exits.
	admit := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "listener-operator-webhook." + ns + ".svc"}}}
	review := func() *http.Response {
		t.Helper()
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1",` +
			`"kind":{"group":"listeners.stackable.tech","version":"v1alpha1","kind":"ListenerClass"},` +
			`"resource":{"group":"listeners.stackable.tech","version":"v1alpha1","resource":"listenerclasses"},"operation":"CREATE",` +
			`"object":{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"ListenerClass","metadata":{"name":"drain"},"spec":{"serviceType":"ClusterIP"}}}}`
		resp, err := admit.Post("https://"+addr+webhooks.PathValidateClass, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("admission request: %v", err)
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(out.String(), `"allowed":true`) {
			t.Errorf("admission answer: %d %s, want 200 and allowed", resp.StatusCode, out.String())
		}
		return resp
	}
	if resp := review(); resp.Close {
		t.Error("an admission answer closed its connection before the stop")
	}
	cancel()
	stoppedAt := time.Now()
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(readyz)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, body.String())
		return resp.StatusCode != http.StatusOK && strings.Contains(last, "shutdown failed"), nil
	})
	if err != nil {
		t.Errorf("/readyz while stopping: %v\n%s; want it failing on the shutdown check", err, last)
	}
	if resp := review(); !resp.Close {
		t.Error("an admission answer while stopping kept its connection open")
	}
	select {
	case code := <-done:
		done <- code // for the cleanup
		if waited := time.Since(stoppedAt); waited < 2*time.Second {
			t.Errorf("the controller exited %s after the stop, before its 2s shutdown delay", waited)
		}
	case <-time.After(time.Minute):
	}
}
