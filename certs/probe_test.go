package certs

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestEndpointProbeChecksEveryReadyReplica: the leader's probe lists the
// webhook Service's EndpointSlices on a real API server and dials every
// ready endpoint; it is satisfied only when each presents a certificate of
// the CA asked about, and ignores endpoints that are not ready (the API
// server sends them nothing).
func TestEndpointProbeChecksEveryReadyReplica(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	oldCA, oldKey, err := GenerateCA("old", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, newKey, err := GenerateCA("new", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// EndpointSlices refuse loopback addresses: serve on another address
	// of this machine.
	ip := localIP(t)
	serve := func(ca, key []byte) (string, int32) {
		certPEM, keyPEM, _ := issue(t, ca, key)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tls.Listen("tcp", net.JoinHostPort(ip, "0"), &tls.Config{Certificates: []tls.Certificate{pair}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
			}
		}()
		return ip, int32(l.Addr().(*net.TCPAddr).Port)
	}
	ns := "certs-probe"
	newNamespace(t, ns)
	slice := func(name string, port int32, ready bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: "webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		}
	}
	_, newPort := serve(newCA, newKey)
	_, oldPort := serve(oldCA, oldKey)
	for _, s := range []*discoveryv1.EndpointSlice{slice("a", newPort, true), slice("b", oldPort, false)} {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	p := &EndpointProbe{Reader: env.Client, Namespace: ns, Service: "webhook", ServerName: "127.0.0.1"}
	if ok, why, err := p.AllServe(ctx, newCA); err != nil || !ok {
		t.Errorf("one ready replica with the new CA's certificate (the old one not ready): %v %q %v, want done", ok, why, err)
	}
	// The replica serving the old CA's certificate becomes ready.
	b := &discoveryv1.EndpointSlice{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, b); err != nil {
		t.Fatal(err)
	}
	b.Endpoints[0].Conditions.Ready = ptr.To(true)
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	ok, why, err := p.AllServe(ctx, newCA)
	if err != nil || ok || !strings.Contains(why, strconv.Itoa(int(oldPort))) || !strings.Contains(why, "does not chain to the CA") {
		t.Errorf("a ready replica still serving the old CA: %v %q %v, want not done, naming it", ok, why, err)
	}
	if ok, why, _ := (&EndpointProbe{Reader: env.Client, Namespace: ns, Service: "none"}).AllServe(ctx, newCA); ok || why != "the Service has no ready endpoint" {
		t.Errorf("no endpoints: %v %q", ok, why)
	}
}

// localIP is an IPv4 address of this machine other than loopback.
func localIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no IPv4 address other than loopback to serve on")
	return ""
}
