package certs

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func mustRenew(t testing.TB, b Bundle, opts RenewOptions, now time.Time) (Bundle, Decision) {
	t.Helper()
	out, d, err := Renew(b, opts, now)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	return out, d
}

func testOpts() RenewOptions {
	return RenewOptions{
		CommonName:      "listener-operator-webhook-ca",
		Hosts:           ServiceHosts("listener-operator-webhook", "listener-operator", "cluster.local"),
		CAValidity:      DefaultCAValidity,
		ServingValidity: 30 * 24 * time.Hour,
	}
}

func TestRenewFromEmptyIssuesAUsableChain(t *testing.T) {
	b, d := mustRenew(t, Bundle{}, testOpts(), testNow)
	if !d.NewCA || !d.NewServing {
		t.Fatalf("empty bundle: decision %+v, want new CA and serving certificate", d)
	}
	// What the API server does: verify the served chain against caBundle
	// for the Service's DNS name.
	pair, err := tls.X509KeyPair(b.ServingCert, b.ServingKey)
	if err != nil {
		t.Fatalf("serving pair: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		t.Fatal("CA PEM not accepted")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		DNSName: "listener-operator-webhook.listener-operator.svc", Roots: pool, CurrentTime: testNow,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		t.Fatalf("API server would reject the certificate: %v", err)
	}
	wantRotate := RotationTime(leaf.NotBefore, leaf.NotAfter)
	if !d.RotateAt.Equal(wantRotate) {
		t.Errorf("RotateAt = %s, want %s", d.RotateAt, wantRotate)
	}
	// Rotation at two thirds of 30 days (+ the backdate) is about 20 days out.
	if got := d.RotateAt.Sub(testNow); got < 19*24*time.Hour || got > 21*24*time.Hour {
		t.Errorf("rotation in %s, want about 20 days", got)
	}
}

func TestRenewKeepsAndRotates(t *testing.T) {
	opts := testOpts()
	good, first := mustRenew(t, Bundle{}, opts, testNow)
	otherCA, _ := mustRenew(t, Bundle{}, opts, testNow)

	tests := []struct {
		name           string
		in             Bundle
		hosts          []string
		now            time.Time
		wantNewCA      bool
		wantNewServing bool
		wantReason     string
	}{
		{name: "valid bundle is kept", in: good, now: testNow.Add(time.Hour), wantReason: "certificates are valid"},
		{name: "just before two thirds is kept", in: good, now: first.RotateAt.Add(-time.Second), wantReason: "certificates are valid"},
		{name: "at two thirds the serving certificate rotates", in: good, now: first.RotateAt, wantNewServing: true, wantReason: "two thirds of its lifetime"},
		{name: "expired serving certificate rotates", in: good, now: testNow.Add(40 * 24 * time.Hour), wantNewServing: true, wantReason: "two thirds"},
		{name: "new host name needs a new serving certificate", in: good, now: testNow, hosts: append(testOpts().Hosts, "other.example"), wantNewServing: true, wantReason: "does not cover other.example"},
		{name: "serving certificate from another CA", in: Bundle{CACert: good.CACert, CAKey: good.CAKey, ServingCert: otherCA.ServingCert, ServingKey: otherCA.ServingKey}, now: testNow, wantNewServing: true, wantReason: "not signed by the CA"},
		{name: "serving key of another certificate", in: Bundle{CACert: good.CACert, CAKey: good.CAKey, ServingCert: good.ServingCert, ServingKey: otherCA.ServingKey}, now: testNow, wantNewServing: true, wantReason: "do not belong together"},
		{name: "garbage serving certificate", in: Bundle{CACert: good.CACert, CAKey: good.CAKey, ServingCert: []byte("garbage"), ServingKey: good.ServingKey}, now: testNow, wantNewServing: true, wantReason: "serving certificate unreadable"},
		{name: "missing CA", in: Bundle{ServingCert: good.ServingCert, ServingKey: good.ServingKey}, now: testNow, wantNewCA: true, wantNewServing: true, wantReason: "CA certificate unreadable"},
		{name: "CA key of another CA", in: Bundle{CACert: good.CACert, CAKey: otherCA.CAKey, ServingCert: good.ServingCert, ServingKey: good.ServingKey}, now: testNow, wantNewCA: true, wantNewServing: true, wantReason: "do not belong together"},
		{name: "CA key garbage", in: Bundle{CACert: good.CACert, CAKey: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}, now: testNow, wantNewCA: true, wantNewServing: true, wantReason: "CA key unreadable"},
		{name: "CA at two thirds of its lifetime", in: good, now: testNow.Add(DefaultCAValidity * 2 / 3), wantNewCA: true, wantNewServing: true, wantReason: "CA reached two thirds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			if tt.hosts != nil {
				o.Hosts = tt.hosts
			}
			out, d := mustRenew(t, tt.in, o, tt.now)
			if d.NewCA != tt.wantNewCA || d.NewServing != tt.wantNewServing {
				t.Fatalf("decision %+v, want NewCA=%v NewServing=%v", d, tt.wantNewCA, tt.wantNewServing)
			}
			if !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to mention %q", d.Reason, tt.wantReason)
			}
			changed := !out.Equal(tt.in)
			if changed != (tt.wantNewCA || tt.wantNewServing) {
				t.Errorf("bundle changed = %v, decision %+v", changed, d)
			}
			if tt.wantNewServing && !tt.wantNewCA && string(out.CACert) != string(tt.in.CACert) {
				t.Error("rotating the serving certificate changed the CA (and so the caBundle)")
			}
			if d := Evaluate(out, o.Hosts, tt.now); d.NewCA || d.NewServing {
				t.Errorf("result of Renew is not good at the same instant: %+v", d)
			}
		})
	}
}

func TestGenerateRejectsBadInput(t *testing.T) {
	caCert, caKey, err := GenerateCA("ca", testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		run     func() error
		wantErr string
	}{
		{"no hosts", func() error { _, _, err := GenerateServing(caCert, caKey, nil, testNow, time.Hour); return err }, "at least one host"},
		{"too short", func() error {
			_, _, err := GenerateServing(caCert, caKey, []string{"a"}, testNow, time.Second)
			return err
		}, "too short"},
		{"CA garbage", func() error {
			_, _, err := GenerateServing([]byte("x"), caKey, []string{"a"}, testNow, time.Hour)
			return err
		}, "read CA certificate"},
		{"CA key garbage", func() error {
			_, _, err := GenerateServing(caCert, []byte("x"), []string{"a"}, testNow, time.Hour)
			return err
		}, "read CA key"},
		{"CA too short", func() error { _, _, err := GenerateCA("ca", testNow, time.Minute); return err }, "too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestServingNeverOutlivesCA(t *testing.T) {
	caCert, caKey, err := GenerateCA("ca", testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := GenerateServing(caCert, caKey, []string{"svc.ns.svc", "127.0.0.1"}, testNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := ParseCertificate(caCert)
	leaf, _ := ParseCertificate(certPEM)
	if leaf.NotAfter.After(ca.NotAfter) {
		t.Errorf("serving certificate expires %s, after its CA (%s)", leaf.NotAfter, ca.NotAfter)
	}
	if len(leaf.IPAddresses) != 1 || leaf.IPAddresses[0].String() != "127.0.0.1" || len(leaf.DNSNames) != 1 {
		t.Errorf("SANs: DNS %v IP %v", leaf.DNSNames, leaf.IPAddresses)
	}
}

func TestParseModeAndTLSVersion(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("selfsigned"); err == nil || !strings.Contains(err.Error(), "self-signed, cert-manager, files") {
		t.Errorf("ParseMode(selfsigned) error %v, want the list of modes", err)
	}
	versions := []struct {
		in      string
		want    uint16
		wantErr string
	}{
		{"1.2", tls.VersionTLS12, ""},
		{"1.3", tls.VersionTLS13, ""},
		{"VersionTLS13", tls.VersionTLS13, ""},
		{"1.1", 0, "too old"},
		{"1.0", 0, "too old"},
		{"2", 0, "unknown TLS version"},
	}
	for _, v := range versions {
		got, err := ParseTLSVersion(v.in)
		if v.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), v.wantErr) {
				t.Errorf("ParseTLSVersion(%q) err = %v, want %q", v.in, err, v.wantErr)
			}
			continue
		}
		if err != nil || got != v.want {
			t.Errorf("ParseTLSVersion(%q) = %x, %v", v.in, got, err)
		}
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, o := range TLSOptions(tls.VersionTLS13, false, nil) {
		o(cfg)
	}
	if cfg.MinVersion != tls.VersionTLS13 || len(cfg.NextProtos) != 1 || cfg.NextProtos[0] != "http/1.1" {
		t.Errorf("TLS options without HTTP/2: min %x protos %v", cfg.MinVersion, cfg.NextProtos)
	}
	for _, o := range TLSOptions(tls.VersionTLS12, true, nil) {
		o(cfg)
	}
	if cfg.NextProtos[0] != "h2" {
		t.Errorf("TLS options with HTTP/2: protos %v", cfg.NextProtos)
	}
}

func BenchmarkEvaluate(b *testing.B) {
	bundle, _ := mustRenew(b, Bundle{}, testOpts(), testNow)
	hosts := testOpts().Hosts
	b.ReportAllocs()
	for b.Loop() {
		if d := Evaluate(bundle, hosts, testNow); d.NewServing {
			b.Fatal(d.Reason)
		}
	}
}

func BenchmarkRenewServing(b *testing.B) {
	bundle, first := mustRenew(b, Bundle{}, testOpts(), testNow)
	b.ReportAllocs()
	for b.Loop() {
		if _, d := mustRenew(b, bundle, testOpts(), first.RotateAt); !d.NewServing {
			b.Fatal("expected a rotation")
		}
	}
}

func TestCABundlePatch(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n")
	tests := []struct {
		name    string
		current [][]byte
		want    string
	}{
		{"every webhook has it", [][]byte{ca, ca}, ""},
		{"no webhooks", nil, ""},
		{"second cleared", [][]byte{ca, nil}, `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"add","path":"/webhooks/1/clientConfig/caBundle","value":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}]`},
		{"all stale", [][]byte{[]byte("old"), []byte("old")}, `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="},{"op":"add","path":"/webhooks/1/clientConfig/caBundle","value":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CABundlePatch("42", tt.current, ca)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("patch\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
