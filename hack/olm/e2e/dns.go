package main

import (
	"net"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// clusterDNS answers the DNS names of Services (<svc>.<ns>.svc.<domain>,
// A records of their cluster IPs) on the nameserver address kubelet gives
// pods. The local cluster runs no DNS server, and OLM's catalog operator
// and packageserver dial a catalog by its Service's name
// (<catalog>.<namespace>.svc:50051): without an answer the Subscription
// stays at "dns: A record lookup error". Every other name gets NXDOMAIN.
// It serves only while this command runs.
type clusterDNS struct {
	conn   net.PacketConn
	k      kube
	suffix string
}

func startDNS(addr, domain string, k kube) (*clusterDNS, error) {
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	d := &clusterDNS{conn: conn, k: k, suffix: ".svc." + strings.TrimSuffix(domain, ".") + "."}
	go d.serve()
	return d, nil
}

func (d *clusterDNS) stop() { _ = d.conn.Close() }

func (d *clusterDNS) serve() {
	buf := make([]byte, 512)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		req := append([]byte(nil), buf[:n]...)
		go func() {
			if resp, err := d.answer(req); err == nil {
				_, _ = d.conn.WriteTo(resp, from)
			}
		}()
	}
}

// answer builds the response to one query: the Service's cluster IP for
// A, no records (but no error) for other types of a Service's name,
// NXDOMAIN for anything else (the resolver then tries its next search
// domain).
func (d *clusterDNS) answer(req []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	ip := d.lookup(q.Name.String())
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if ip == nil {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if ip != nil && q.Type == dnsmessage.TypeA {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
		if err := b.AResource(rr, dnsmessage.AResource{A: [4]byte(ip)}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// lookup is the cluster IP of the Service a name names, or nil.
func (d *clusterDNS) lookup(name string) net.IP {
	name = strings.ToLower(name)
	svc, ns, ok := strings.Cut(strings.TrimSuffix(name, d.suffix), ".")
	if !strings.HasSuffix(name, d.suffix) || !ok || svc == "" || strings.Contains(ns, ".") {
		return nil
	}
	ip := net.ParseIP(d.k.field(ns, "service/"+svc, "{.spec.clusterIP}")).To4()
	return ip
}
