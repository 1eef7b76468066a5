//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"
)

// Issue 51: MetalLB's L2 mode on the 2 real nodes, seen by a client that
// only ARP can lead to the address. The address MetalLB gives a Service of
// its class answers; the client's neighbour entry for it is the MAC of the
// node MetalLB says announces it; with that node's speaker stopped, the
// other node announces it (its MAC) and it still answers.
func TestMetalLBL2Failover(t *testing.T) {
	ctx := t.Context()
	requireMetalLB(t, ctx)
	ns := namespace(t, ctx, "e2e-l2")
	webPod(t, ctx, ns, "web")
	ip := ingressIP(t, ctx, ns, "web")
	if !inPool(ip) {
		t.Fatalf("MetalLB gave Service web %s, want an address of its pool 10.88.0.240–.253", ip)
	}
	client := newL2Client(t, ctx)
	client.answers(t, ctx, ip, "8080", "web")

	first := announcerMAC(t, ctx, client, ns, ip, "")
	t.Logf("%s announced by %s (%s)", ip, first.node, first.mac)

	stopSpeaker(t, ctx, first.node)
	client.answers(t, ctx, ip, "8080", "web")
	second := announcerMAC(t, ctx, client, ns, ip, first.node)
	t.Logf("%s moved to %s (%s)", ip, second.node, second.mac)
	if second.mac == first.mac {
		t.Errorf("the client still resolves %s to %s after %s's speaker stopped", ip, first.mac, first.node)
	}
}

type announced struct{ node, mac string }

// announcerMAC waits until a node other than not announces the Service's
// address and the client resolves it to that node's MAC.
func announcerMAC(t *testing.T, ctx context.Context, client *l2Client, ns, ip, not string) announced {
	t.Helper()
	var a announced
	eventually(t, ctx, 90*time.Second, "the client resolves "+ip+" to the announcing node's MAC", func(ctx context.Context) (bool, string) {
		a.node = announcer(ctx, ns, "web")
		if a.node == "" || a.node == not {
			return false, "announcing node: " + a.node
		}
		a.mac = nodeMAC(t, ctx, a.node)
		// A request refreshes the neighbour entry (ARP again once stale).
		_, _ = client.get(ctx, ip, "8080")
		got := client.neighbour(ctx, ip)
		return got == a.mac, "announced by " + a.node + " (" + a.mac + "), the client resolves " + ip + " to " + got
	})
	return a
}
