package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serveTLS serves the TLS settings the controller gives the webhook server
// on a loopback listener until the test ends.
func serveTLS(t *testing.T, opts []func(*tls.Config)) string {
	t.Helper()
	cfg := &tls.Config{NextProtos: []string{"h2"}} // controller-runtime's starting point
	for _, o := range opts {
		o(cfg)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

func issue(t *testing.T, caCert, caKey []byte) (certPEM, keyPEM []byte, leaf *x509.Certificate) {
	t.Helper()
	certPEM, keyPEM, err := GenerateServing(caCert, caKey, []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = ParseCertificate(certPEM)
	return certPEM, keyPEM, leaf
}

func TestFilesModeWaitsForTheCertificateAndFollowsChanges(t *testing.T) {
	caCert, caKey, err := GenerateCA("files-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w := &Watcher{Dir: t.TempDir(), Poll: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	addr := serveTLS(t, TLSOptions(tls.VersionTLS12, false, w.GetCertificate))
	ready := w.ReadyCheck(nil)

	// Nothing mounted yet: not ready, and the handshake fails with a
	// message that names the directory rather than crashing the server.
	if err := ready(&http.Request{}); err == nil || !strings.Contains(err.Error(), "no webhook serving certificate loaded from "+w.Dir) {
		t.Fatalf("readiness without files: %v", err)
	}
	if _, err := served(addr, caCert); err == nil {
		t.Fatal("handshake succeeded without a certificate")
	}

	certPEM, keyPEM, first := issue(t, caCert, caKey)
	if _, err := WriteKeyPair(w.Dir, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	eventuallyServed(t, "first certificate served", addr, caCert, first)
	if err := ready(&http.Request{}); err != nil {
		t.Fatalf("readiness with a valid certificate: %v", err)
	}

	certPEM, keyPEM, second := issue(t, caCert, caKey)
	if changed, err := WriteKeyPair(w.Dir, certPEM, keyPEM); err != nil || !changed {
		t.Fatalf("write renewed pair: changed=%v err=%v", changed, err)
	}
	if changed, err := WriteKeyPair(w.Dir, certPEM, keyPEM); err != nil || changed {
		t.Fatalf("rewriting the same pair: changed=%v err=%v, want no change", changed, err)
	}
	eventuallyServed(t, "renewed certificate served", addr, caCert, second)

	reg := prometheus.NewRegistry()
	if err := w.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil || len(families) != 1 {
		t.Fatalf("gather: %v %v", families, err)
	}
	if got := families[0].GetMetric()[0].GetGauge().GetValue(); got != float64(second.NotAfter.Unix()) {
		t.Errorf("%s = %v, want the served certificate's notAfter %d", families[0].GetName(), got, second.NotAfter.Unix())
	}

	// A clock past the certificate's end makes the replica unready.
	late := &Watcher{Dir: w.Dir, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
	late.cw = w.cw
	if err := late.ReadyCheck(nil)(&http.Request{}); err == nil || !strings.Contains(err.Error(), "not now") {
		t.Errorf("readiness with an expired certificate: %v", err)
	}
}

// TestReadinessNeedsTheInjectedCA: a replica is ready only while the
// certificate it serves chains to every caBundle the API server verifies
// it with (the old CA, the new CA or both during a CA change).
func TestReadinessNeedsTheInjectedCA(t *testing.T) {
	caCert, caKey, err := GenerateCA("ready-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, err := GenerateCA("other-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w := &Watcher{Dir: t.TempDir(), Poll: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	certPEM, keyPEM, _ := issue(t, caCert, caKey)
	if _, err := WriteKeyPair(w.Dir, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "certificate loaded", func() error {
		if w.Leaf() == nil {
			return errors.New("not loaded")
		}
		return nil
	})
	both := append(append([]byte{}, otherCA...), caCert...)
	for _, tc := range []struct {
		name    string
		bundles [][]byte
		want    string
	}{
		{"its CA", [][]byte{caCert}, ""},
		{"old and new CA", [][]byte{both, caCert}, ""},
		{"another CA", [][]byte{caCert, otherCA}, "the API server would refuse this replica: serving certificate"},
		{"an empty caBundle", [][]byte{nil}, "a webhook's caBundle holds no CA yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.Trusted = func(context.Context) ([][]byte, error) { return tc.bundles, nil }
			err := w.ReadyCheck(nil)(&http.Request{})
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("ready = %v, want %q", err, tc.want)
			}
		})
	}
}

// eventuallyServed waits until the server at addr presents the certificate
// want (compared by serial number).
func eventuallyServed(t *testing.T, what, addr string, caPEM []byte, want *x509.Certificate) {
	t.Helper()
	eventually(t, what, func() error {
		got, err := served(addr, caPEM)
		if err != nil {
			return err
		}
		if got.SerialNumber.Cmp(want.SerialNumber) != 0 {
			return errSerial(got, want)
		}
		return nil
	})
}

func errSerial(got, want *x509.Certificate) error {
	return fmt.Errorf("serving %s, want %s", got.SerialNumber, want.SerialNumber)
}

func TestTLSSettingsOfTheWebhookServer(t *testing.T) {
	caCert, caKey, err := GenerateCA("tls-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _ := issue(t, caCert, caKey)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCert)
	dial := func(addr string, maxVersion uint16) (tls.ConnectionState, error) {
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: maxVersion, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}

	tests := []struct {
		name        string
		min         uint16
		http2       bool
		clientMax   uint16
		wantErr     bool
		wantVersion uint16
		wantProto   string
	}{
		{name: "TLS 1.1 client refused", min: tls.VersionTLS12, clientMax: tls.VersionTLS11, wantErr: true},
		{name: "TLS 1.2 client served HTTP/1.1 only", min: tls.VersionTLS12, clientMax: tls.VersionTLS12, wantVersion: tls.VersionTLS12, wantProto: "http/1.1"},
		{name: "min 1.3 refuses a 1.2 client", min: tls.VersionTLS13, clientMax: tls.VersionTLS12, wantErr: true},
		{name: "HTTP/2 when enabled", min: tls.VersionTLS12, http2: true, clientMax: tls.VersionTLS13, wantVersion: tls.VersionTLS13, wantProto: "h2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveTLS(t, TLSOptions(tt.min, tt.http2, get))
			st, err := dial(addr, tt.clientMax)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("handshake succeeded with version %x", st.Version)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != tt.wantVersion || st.NegotiatedProtocol != tt.wantProto {
				t.Errorf("negotiated version %x protocol %q, want %x %q", st.Version, st.NegotiatedProtocol, tt.wantVersion, tt.wantProto)
			}
		})
	}
}

// BenchmarkGetCertificate is the per-handshake cost the watcher adds.
func BenchmarkGetCertificate(b *testing.B) {
	caCert, caKey, err := GenerateCA("bench-ca", time.Now(), 24*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	certPEM, keyPEM, err := GenerateServing(caCert, caKey, []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	w := &Watcher{Dir: b.TempDir(), Poll: time.Hour}
	if _, err := WriteKeyPair(w.Dir, certPEM, keyPEM); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()
	for w.Leaf() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c, err := w.GetCertificate(nil); err != nil || c == nil {
			b.Fatal(err)
		}
	}
}
