package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHelloAndFetch(t *testing.T) {
	srv := httptest.NewServer(hello("hello-0"))
	defer srv.Close()
	var out bytes.Buffer
	if err := fetchTo(&out, srv.URL+"/any/path", time.Second); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if out.String() != "hello from hello-0\n" {
		t.Errorf("body %q, want the pod's name", out.String())
	}

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	err := fetchTo(&out, notFound.URL, time.Second)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("fetch of a 404: %v, want an error naming the status", err)
	}
}

// TestCertificateIn: the key pair is read at each handshake, so a Secret
// written after the server started (or reissued) is served.
func TestCertificateIn(t *testing.T) {
	dir := t.TempDir()
	get := certificateIn(dir)
	if _, err := get(nil); err == nil {
		t.Fatal("no files yet, but a certificate")
	}
	srv := httptest.NewTLSServer(hello("x"))
	defer srv.Close()
	cert := srv.TLS.Certificates[0]
	writePEM(t, filepath.Join(dir, "tls.crt"), "CERTIFICATE", cert.Certificate[0])
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "tls.key"), "PRIVATE KEY", key)
	got, err := get(nil)
	if err != nil || !bytes.Equal(got.Certificate[0], cert.Certificate[0]) {
		t.Fatalf("certificate %v, %v; want the one written", got, err)
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
