package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(testLogWriter{})))
	testenv.Main(m, &env, testenv.Options{})
}

// testLogWriter drops the manager's logs; failures print what they need.
type testLogWriter struct{}

func (testLogWriter) Write(p []byte) (int, error) { return len(p), nil }

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// freePort returns a loopback port that was free a moment ago: the
// controller-runtime webhook server takes a port number, not a listener.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clock is a test clock that can be moved forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
func newNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"certs-test": name}}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
}

// served dials the webhook server like the API server does (trusting only
// caPEM, checking the name the certificate was issued for) and returns the
// certificate it presents.
func served(addr string, caPEM []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("bad CA PEM")
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// selfSignedRig is a manager running the self-signed mode the way the
// controller command wires it, with a tiny validating webhook of its own
// for ConfigMaps in one namespace, registered on a test-only configuration.
type selfSignedRig struct {
	ns, secret, config string
	addr               string
	clock              *clock
	boot               *Bootstrapper
	watcher            *Watcher
	ready              func() error
	calls              atomic.Int64
	// movedCalls counts the calls on movedPath, where moveWebhook sends
	// the API server.
	movedCalls atomic.Int64
	// probe is the Bootstrapper's probe; a test can hold its answer at
	// "not yet" to look at the state between a CA change and the drop of
	// the previous CA, which the real servers may otherwise pass through
	// within milliseconds.
	probe *heldProbe
}

// heldProbe answers "not every replica serves the new CA" while held, and
// asks the real probe otherwise.
type heldProbe struct {
	ServingProbe
	held atomic.Bool
}

func (p *heldProbe) AllServe(ctx context.Context, caPEM []byte) (bool, string, error) {
	if p.held.Load() {
		return false, "held by the test", nil
	}
	return p.ServingProbe.AllServe(ctx, caPEM)
}

func startSelfSigned(t *testing.T, ns string) *selfSignedRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	newNamespace(t, ns)
	r := &selfSignedRig{ns: ns, secret: "webhook-cert", config: ns + "-validating", clock: &clock{}}
	r.probe = &heldProbe{}
	port := freePort(t)
	r.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	// The configuration exists before the operator starts, with an empty
	// caBundle, as the manifests install it.
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://" + r.addr + "/validate-configmap"
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: r.config},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "configmaps.certs-test.listeners.stackable.tech",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"certs-test": ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	if err := env.Client.Create(ctx, vwc); err != nil {
		t.Fatalf("create webhook configuration: %v", err)
	}

	r.watcher = &Watcher{Dir: t.TempDir(), Poll: 200 * time.Millisecond}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    "127.0.0.1",
			Port:    port,
			TLSOpts: TLSOptions(tls.VersionTLS12, false, r.watcher.GetCertificate),
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register("/validate-configmap", &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response {
			r.calls.Add(1)
			return admission.Allowed("")
		})})
	mgr.GetWebhookServer().Register(movedPath, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response {
			r.calls.Add(1)
			r.movedCalls.Add(1)
			return admission.Allowed("")
		})})
	r.boot = &Bootstrapper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("listener-operator"), Opts: SelfSignedOptions{
		Namespace: ns, SecretName: r.secret,
		// The API server reaches this test server by IP, not by Service.
		Hosts:                           append(ServiceHosts("listener-operator-webhook", ns, "cluster.local"), "127.0.0.1"),
		ServingValidity:                 6 * time.Minute,
		ValidatingWebhookConfigurations: []string{r.config},
		Now:                             r.clock.Now,
		Probe:                           r.probe,
	}}
	r.probe.ServingProbe = &EndpointProbe{Addrs: []string{r.addr}, ServerName: "127.0.0.1"}
	if err := r.boot.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	syncer := &SecretSync{Reader: mgr.GetAPIReader(), Namespace: ns, SecretName: r.secret, Dir: r.watcher.Dir, Interval: 200 * time.Millisecond}
	if err := mgr.Add(syncer); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(r.watcher); err != nil {
		t.Fatal(err)
	}
	check := r.watcher.ReadyCheck(mgr.GetWebhookServer().StartedChecker())
	r.ready = func() error { return check(&http.Request{}) }

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = env.Client.Delete(context.Background(), vwc)
	})
	return r
}

func (r *selfSignedRig) secretData(t *testing.T) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: r.secret}, s); err != nil {
		t.Fatalf("read Secret: %v", err)
	}
	return s.Data
}

func (r *selfSignedRig) caBundle(t *testing.T) []byte {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: r.config}, vwc); err != nil {
		t.Fatalf("read webhook configuration: %v", err)
	}
	return vwc.Webhooks[0].ClientConfig.CABundle
}

// movedPath is the webhook's second path (see moveWebhook).
const movedPath = "/validate-configmap-moved"

// moveWebhook points the webhook configuration at movedPath on the same
// server. The API server applies configuration updates in order, so a call
// on movedPath shows that it has applied every update before this one.
func (r *selfSignedRig) moveWebhook(t *testing.T) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: r.config}, vwc); err != nil {
		t.Fatalf("read webhook configuration: %v", err)
	}
	url := "https://" + r.addr + movedPath
	vwc.Webhooks[0].ClientConfig.URL = &url
	if err := env.Client.Update(context.Background(), vwc); err != nil {
		t.Fatalf("move the webhook to %s: %v", movedPath, err)
	}
}

// admit creates a ConfigMap through the API server, which must call the
// webhook over TLS and trust it.
func (r *selfSignedRig) admit(t *testing.T, name string) error {
	t.Helper()
	before := r.calls.Load()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		return err
	}
	if r.calls.Load() == before {
		return fmt.Errorf("the API server admitted ConfigMap %s without calling the webhook", name)
	}
	return nil
}

// expectEvent waits for an event with reason on the Secret.
func (r *selfSignedRig) expectEvent(t *testing.T, reason, note string) {
	t.Helper()
	eventually(t, "event "+reason+" on the Secret", func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(r.ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Kind == "Secret" && e.Regarding.Name == r.secret && strings.Contains(e.Note, note) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
}

func TestSelfSignedModeMakesTheAPIServerTrustTheWebhook(t *testing.T) {
	testenv.Require(t, env)
	r := startSelfSigned(t, "certs-self-signed")

	var ca []byte
	eventually(t, "caBundle holds the Secret's CA", func() error {
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: r.secret}, s); err != nil {
			return err
		}
		ca = s.Data[KeyCACert]
		if len(ca) == 0 {
			return fmt.Errorf("Secret has no CA yet")
		}
		if got := r.caBundle(t); !bytes.Equal(got, ca) {
			return fmt.Errorf("caBundle is %q", got)
		}
		return nil
	})
	eventually(t, "readiness", r.ready)
	r.expectEvent(t, EventCertificatesIssued, "Issued a CA and a webhook serving certificate")
	if err := r.admit(t, "first"); err != nil {
		t.Fatalf("admission through the API server: %v", err)
	}
	leaf, err := served(r.addr, ca)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParseCertificate(r.secretData(t)[KeyTLSCert])
	if leaf.SerialNumber.Cmp(want.SerialNumber) != 0 {
		t.Errorf("served certificate %s is not the Secret's %s", leaf.SerialNumber, want.SerialNumber)
	}

	t.Run("a cleared caBundle is written again", func(t *testing.T) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Name: r.config}, vwc); err != nil {
			t.Fatal(err)
		}
		vwc.Webhooks[0].ClientConfig.CABundle = nil
		if err := env.Client.Update(context.Background(), vwc); err != nil {
			t.Fatal(err)
		}
		eventually(t, "caBundle restored", func() error {
			if got := r.caBundle(t); !bytes.Equal(got, ca) {
				return fmt.Errorf("caBundle is %q", got)
			}
			return nil
		})
		if err := r.admit(t, "after-clear"); err != nil {
			t.Fatalf("admission after the caBundle was restored: %v", err)
		}
	})

	t.Run("the leader rotates the serving certificate at two thirds without a restart", func(t *testing.T) {
		before := r.secretData(t)
		// Six minutes of validity plus five backdated: due after 7m20s
		// from issuance, which was 5 minutes before the real now.
		r.clock.Advance(3 * time.Minute)
		res, err := r.boot.Reconcile(context.Background(), ctrl.Request{})
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		after := r.secretData(t)
		if bytes.Equal(after[KeyTLSCert], before[KeyTLSCert]) {
			t.Fatal("serving certificate was not rotated")
		}
		if !bytes.Equal(after[KeyCACert], ca) || !bytes.Equal(r.caBundle(t), ca) {
			t.Fatal("rotating the serving certificate changed the CA")
		}
		if res.RequeueAfter < time.Minute || res.RequeueAfter > 5*time.Minute {
			t.Errorf("next look in %s, want about two thirds of the new certificate's lifetime", res.RequeueAfter)
		}
		newLeaf, _ := ParseCertificate(after[KeyTLSCert])
		eventuallyServed(t, "the server presents the new certificate", r.addr, ca, newLeaf)
		if err := r.admit(t, "after-rotation"); err != nil {
			t.Fatalf("admission after rotation: %v", err)
		}
		r.expectEvent(t, EventCertificateRotated, "reached two thirds of its lifetime")
	})

	t.Run("a serving certificate replaced in the Secret is served without a restart", func(t *testing.T) {
		data := r.secretData(t)
		certPEM, keyPEM, err := GenerateServing(data[KeyCACert], data[KeyCAKey], []string{"127.0.0.1", "listener-operator-webhook." + r.ns + ".svc"}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: r.secret}, s); err != nil {
			t.Fatal(err)
		}
		s.Data[KeyTLSCert], s.Data[KeyTLSKey] = certPEM, keyPEM
		if err := env.Client.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		want, _ := ParseCertificate(certPEM)
		eventuallyServed(t, "the server presents the replaced certificate", r.addr, ca, want)
		if err := r.admit(t, "after-replacement"); err != nil {
			t.Fatalf("admission after replacement: %v", err)
		}
	})

	t.Run("a corrupted CA is replaced without refusing an admission", func(t *testing.T) {
		// Admissions through the API server all along the change.
		stop := make(chan struct{})
		var failures []string
		var admitted int
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if err := r.admit(t, fmt.Sprintf("during-ca-change-%d", i)); err != nil {
					failures = append(failures, err.Error())
				} else {
					admitted++
				}
			}
		}()
		// Until the test has seen both CAs trusted, the previous one
		// stays, whatever the server already serves.
		r.probe.held.Store(true)
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: r.secret}, s); err != nil {
			t.Fatal(err)
		}
		s.Data[KeyCAKey] = []byte("not a key")
		if err := env.Client.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if _, err := r.boot.Reconcile(context.Background(), ctrl.Request{}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		data := r.secretData(t)
		newCA := data[KeyCACert]
		if bytes.Equal(newCA, ca) {
			t.Fatal("the CA was kept although its key is unusable")
		}
		// Both CAs are trusted while the server may serve either.
		if got := r.caBundle(t); !bytes.Contains(got, bytes.TrimSpace(newCA)) || !bytes.Contains(got, bytes.TrimSpace(ca)) {
			t.Fatalf("caBundle right after the CA change:\n%s\nwant the new and the old CA", got)
		}
		if !bytes.Equal(data[KeyPreviousCACert], ca) {
			t.Errorf("Secret's %s = %q, want the old CA", KeyPreviousCACert, data[KeyPreviousCACert])
		}
		eventually(t, "the server presents a certificate of the new CA", func() error {
			_, err := served(r.addr, newCA)
			return err
		})
		// Now the old CA goes.
		r.probe.held.Store(false)
		eventually(t, "the caBundle holds the new CA only", func() error {
			if _, err := r.boot.Reconcile(context.Background(), ctrl.Request{}); err != nil {
				return err
			}
			if got := r.caBundle(t); !bytes.Equal(got, newCA) {
				return fmt.Errorf("caBundle %q", got)
			}
			if _, ok := r.secretData(t)[KeyPreviousCACert]; ok {
				return fmt.Errorf("the Secret still has %s", KeyPreviousCACert)
			}
			return nil
		})
		// Admissions go on until the API server has applied the
		// configuration that trusts the new CA only and admitted under it.
		r.moveWebhook(t)
		eventually(t, "an admission under the configuration that trusts the new CA only", func() error {
			if r.movedCalls.Load() == 0 {
				return fmt.Errorf("no call on %s yet", movedPath)
			}
			return nil
		})
		close(stop)
		<-done
		if len(failures) > 0 || admitted == 0 {
			t.Errorf("%d admissions refused during the CA change (%d admitted): %v", len(failures), admitted, failures)
		}
		if err := r.admit(t, "after-new-ca"); err != nil {
			t.Fatalf("admission with the new CA: %v", err)
		}
		r.expectEvent(t, EventCertificatesIssued, "Issued a new CA (CA key unreadable")
		r.expectEvent(t, EventCertificateRotated, "the previous CA is no longer trusted")
	})
}
