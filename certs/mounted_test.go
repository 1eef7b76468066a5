package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// projectSecret lays out files the way kubelet projects a Secret volume
// (its AtomicWriter): the data in a timestamped directory, "..data"
// pointing at it, and each key a symlink through "..data". An update
// writes a new directory and swaps "..data" with one rename.
func projectSecret(t *testing.T, dir, version string, certPEM, keyPEM []byte) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_11_22_"+version)
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{CertFile: certPEM, KeyFile: keyPEM} {
		if err := os.WriteFile(filepath.Join(ts, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CertFile, KeyFile} {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRenewedMountedSecretIsServedWithoutRestart is the cert-manager mode's
// renewal as the pod sees it: cert-manager updates the Secret, kubelet swaps
// the projected files, and the webhook server presents the new certificate.
// The periodic re-read is set to an hour, so only the file events can make
// the switch.
func TestRenewedMountedSecretIsServedWithoutRestart(t *testing.T) {
	caCert, caKey, err := GenerateCA("mounted-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM, keyPEM, first := issue(t, caCert, caKey)
	projectSecret(t, dir, "1", certPEM, keyPEM)

	w := &Watcher{Dir: dir, Poll: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	addr := serveTLS(t, TLSOptions(tls.VersionTLS12, false, w.GetCertificate))

	eventuallyServed(t, "mounted certificate served", addr, caCert, first)
	for i := 2; i <= 3; i++ {
		certPEM, keyPEM, next := issue(t, caCert, caKey)
		projectSecret(t, dir, fmt.Sprint(i), certPEM, keyPEM)
		eventuallyServed(t, fmt.Sprintf("renewal %d served", i-1), addr, caCert, next)
	}
}
