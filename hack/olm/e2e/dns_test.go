package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A pod's resolver asks for a catalog's Service name through its search
// domains; it must get the Service's cluster IP for the full name and
// NXDOMAIN for the rest, or it stops at the first answer.
func TestClusterDNSAnswersServiceNames(t *testing.T) {
	// kubectl as the answer reads it: the Service's cluster IP, nothing
	// for a Service that does not exist.
	kubectl := filepath.Join(t.TempDir(), "kubectl")
	script := "#!/bin/sh\ncase \"$*\" in *service/listener-operator*) echo 10.88.128.10;; esac\n"
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := startDNS("127.0.0.1:0", "cluster.local", kube{kubectl: kubectl})
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", d.conn.LocalAddr().String())
	}}
	ctx := context.Background()
	ips, err := r.LookupIPAddr(ctx, "listener-operator.operator-lifecycle-manager.svc.cluster.local.")
	if err != nil || len(ips) != 1 || ips[0].IP.String() != "10.88.128.10" {
		t.Fatalf("Service name: got %v, %v; want 10.88.128.10", ips, err)
	}
	for _, name := range []string{
		"listener-operator.operator-lifecycle-manager.svc.operator-lifecycle-manager.svc.cluster.local.",
		"missing.operator-lifecycle-manager.svc.cluster.local.",
		"example.com.",
	} {
		_, err := r.LookupIPAddr(ctx, name)
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("%s: got %v, want not found", name, err)
		}
	}
}
