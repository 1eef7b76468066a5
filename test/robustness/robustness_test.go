package robustness

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

var (
	duration = flag.Duration("robustness.duration", 0, "run histories of random seeds for this long (TestRandomHistories; 0 skips it)")
	// The fixed seeds: 1 and 17 find the mutants (seed 1 within 26
	// operations, 17 within 18), 1957 plays what they do not
	// (ScaleStatefulSet, PutNodeAddress, a quota that refuses a Service
	// and is lifted), so that every kind is played (Unplayed).
	seedList = flag.String("robustness.seeds", "1:26,17:18,1957:13", "the seeds TestFixedSeeds plays, comma-separated, each with :<operations> or -robustness.ops")
	opsFlag  = flag.Int("robustness.ops", 30, "operations per history")
	// withGateway runs Traefik and plays gateway classes (make robustness).
	withGateway = flag.Bool("robustness.gateway", false, "run Traefik (bin/tools/traefik) against the API server and play Gateways and gateway classes (make robustness; needs make gateway-tools)")
	shrink      = flag.Duration("robustness.shrink", 4*time.Minute, "how long to shrink a failing history at most (0: not at all)")
)

// histories hands each history a world of its own.
type histories struct {
	n   int
	cov *Coverage
}

func (h *histories) world() World {
	h.n++
	w := NewWorld(h.n)
	w.Gateway = cluster.Gateway != nil
	return w
}

// play runs ops of seed in a fresh world and fails t with the seed and the
// shrunk history as a regression row when a promise broke.
func (h *histories) play(t *testing.T, seed uint64, ops []Op) {
	t.Helper()
	ctx := t.Context()
	f, err := cluster.Run(ctx, h.world(), seed, ops, h.cov)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if f == nil {
		return
	}
	t.Logf("ROBUSTNESS: found %s seed=%d after=%d operations", f.Invariant, seed, len(f.Ops))
	t.Errorf("%v", f)
	if *shrink <= 0 {
		return
	}
	replay := func(ctx context.Context, ops []Op) (*Failure, error) {
		return cluster.Run(ctx, h.world(), seed, ops, nil)
	}
	small, done, err := Shrink(ctx, f, replay, *shrink)
	if err != nil {
		t.Logf("shrinking stopped: %v", err)
	}
	note := "shrunk"
	if !done {
		note = "shrunk as far as -robustness.shrink allowed"
	}
	t.Errorf("%s to %d operations (%v); as a row of regressions:\n%s", note, len(small.Ops), small.Lines, small.Row())
}

// TestFixedSeeds plays the fixed budget (-robustness.seeds, -robustness.ops):
// the run `make test` and `make robustness-mutants` include.
func TestFixedSeeds(t *testing.T) {
	testenv.Require(t, env)
	h := &histories{cov: NewCoverage()}
	total := 0
	for _, s := range strings.Split(*seedList, ",") {
		seed, n, err := parseSeed(s, *opsFlag)
		if err != nil {
			t.Fatal(err)
		}
		ops := Generate(seed, n)
		total += len(ops)
		h.play(t, seed, ops)
		if t.Failed() {
			return
		}
	}
	t.Logf("ROBUSTNESS: not found: %d histories, %d operations%s; reached:\n%s", h.n, total, traefikNote(), h.cov)
	if missing := h.cov.Unplayed(); len(missing) > 0 {
		t.Errorf("the fixed seeds never played %v: choose -robustness.seeds (or weights in generate.go) that do", missing)
	}
}

// parseSeed reads one entry of -robustness.seeds: a seed, with
// ":<operations>" or else n operations.
func parseSeed(s string, n int) (uint64, int, error) {
	seedText, opsText, hasOps := strings.Cut(strings.TrimSpace(s), ":")
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("-robustness.seeds: %q is not a seed", s)
	}
	if hasOps {
		if n, err = strconv.Atoi(opsText); err != nil || n <= 0 {
			return 0, 0, fmt.Errorf("-robustness.seeds: %q: operations %q is not a positive number", s, opsText)
		}
	}
	return seed, n, nil
}

// TestRandomHistories plays histories of random seeds for
// -robustness.duration (`make robustness`).
func TestRandomHistories(t *testing.T) {
	testenv.Require(t, env)
	if *duration <= 0 {
		t.Skip("set -robustness.duration (make robustness)")
	}
	h := &histories{n: 1000, cov: NewCoverage()}
	deadline := time.Now().Add(*duration)
	runs, total := 0, 0
	for time.Now().Before(deadline) && !t.Failed() {
		seed := rand.Uint64()
		ops := GenerateWith(seed, *opsFlag, cluster.Gateway != nil)
		h.play(t, seed, ops)
		runs, total = runs+1, total+len(ops)
	}
	t.Logf("ROBUSTNESS: %d histories, %d operations in %s%s; reached:\n%s", runs, total, *duration, traefikNote(), h.cov)
}

// traefikNote says whether the run played gateway classes against Traefik.
func traefikNote() string {
	if cluster.Gateway == nil {
		return ", leaving Traefik and gateway classes out (-robustness.gateway: make robustness)"
	}
	return ", with Traefik and gateway classes"
}

// regressions are shrunk histories the suite found, each kept as a test:
// paste the row a failure prints here.
var regressions = []struct {
	name string
	seed uint64
	ops  []Op
}{
	// Mode Warn must never hand an exposure key to a tenant, not even on a
	// Service that carries it (mutant robustness_mutant_warn_exposure):
	// the class sets the network, the tenant's override of it is left out,
	// and the class stops setting it.
	{name: "ServicesFollowTheirClass", seed: 0, ops: []Op{
		{Kind: PutClass, Type: "ClusterIP", Mode: "Warn", Network: "internal"},
		{Kind: PutListener, Name: "web", Ports: []int32{80}, Overrides: []string{"annotations:metallb.io/address-pool=public"}},
		{Kind: PutClass, Type: "ClusterIP", Mode: "Warn"},
	}},
	// A Listener moved to a ClusterIP class with its ports removed kept
	// the LoadBalancer Service of its old class: a portless Listener has
	// no Service.
	{name: "ServicesFollowTheirClass", seed: 0, ops: []Op{
		{Kind: PutClass, Type: "LoadBalancer"},
		{Kind: PutClass, Class: 1, Type: "ClusterIP"},
		{Kind: PutListener, Name: "web", Ports: []int32{80}},
		{Kind: PutListener, Name: "web", Class: 1},
	}},
	// A Listener moved to a class whose node-port range has no room for
	// its new port: its Service must still drop the ports the Listener no
	// longer has and take its new class's metadata, keeping only what needs
	// a node port it cannot have.
	{name: "ServicesFollowTheirClass", seed: 16976949378229261705, ops: []Op{
		{Kind: PutClass, Type: "ClusterIP"},
		{Kind: PutClass, Class: 1, Type: "LoadBalancer", Range: true, Network: "private"},
		{Kind: PutListener, Tenant: 1, Name: "db", Class: 1, Ports: []int32{8080}},
		{Kind: PutListener, Name: "kafka", Class: 1, Ports: []int32{443, 8080}},
		{Kind: PutListener, Tenant: 1, Name: "kafka", Class: 1, Ports: []int32{443}, Labels: []string{"app.kubernetes.io/name=x", "team=a"}},
		{Kind: PutListener, Name: "db", Ports: []int32{8080, 9092}},
		{Kind: PutListener, Name: "db", Class: 1, Ports: []int32{9092}, Overrides: []string{"spec:sessionAffinity=ClientIP"}},
	}},
	// Found with pods (seed 367551721487141630, shrunk from 19 operations):
	// a StatefulSet deleted, its claims kept, and their class narrowed
	// from NodePort to ClusterIP. The claims' Listeners wait for their
	// StatefulSet (Invalid), and their Services must still follow the
	// class: they kept NodePort before.
	{name: "ServicesFollowTheirClass", seed: 367551721487141630, ops: []Op{
		{Kind: PutClass, Type: "NodePort", Mode: "Enforce", Network: "private"},
		{Kind: PutStatefulSet, Name: "sts-web", Ports: []int32{8080}, Replicas: 2},
		{Kind: DeleteStatefulSet, Name: "sts-web"},
		{Kind: PutClass, Type: "ClusterIP", Template: 4, Mode: "Warn", Network: "private"},
	}},
	// A Listener moved into a class whose range the StatefulSet's pods
	// filled keeps its Service's node port from its old class, outside the
	// range: Ready says so.
	{name: "ServicesFollowTheirClass", seed: 7614991737441153512, ops: []Op{
		{Kind: PutClass, Type: "LoadBalancer", Template: 4, Mode: "Warn"},
		{Kind: PutClass, Class: 3, Type: "NodePort", Range: true, Template: 1, Allow: true},
		{Kind: PutStatefulSet, Name: "sts-db", Class: 3, Ports: []int32{8080, 9092}, Replicas: 2},
		{Kind: PutListener, Tenant: 1, Name: "web", Ports: []int32{9092}},
		{Kind: PutListener, Tenant: 1, Name: "web", Class: 3, Ports: []int32{8080, 443}},
	}},
	// Found by make robustness: a claim written while the webhooks were
	// off (unmarked) gets its Listener at the operator's next start (its
	// scan); that start is catching up, not a restart with nothing
	// changed. Every other promise of the history still holds.
	{name: "RestartWritesNothing", seed: 13380494849650035874, ops: []Op{
		{Kind: PutClass, Type: "LoadBalancer", Range: true, Template: 4},
		{Kind: PutClass, Class: 1, Type: "ClusterIP", Template: 2, Allow: true},
		{Kind: RestartOperator},
		{Kind: WebhooksOff},
		{Kind: PutListener, Name: "db", Class: 1, Ports: []int32{9092}, Labels: []string{"team.robust.test/owner=b"}},
		{Kind: RestartOperator},
		{Kind: WebhooksOff},
		{Kind: PutClaim, Name: "claim-db"},
		{Kind: RestartOperator},
	}},
	// Found by make robustness (shrunk by hand from 15 operations): a
	// sharing range narrowed below a replica's block, whose first port
	// the bootstrap holds, said SharedPortTaken (delete the bootstrap),
	// which would not help: it is SharedPortsExhausted (TestAssign).
	{name: "SharedPortsShortSaid", seed: 18423339426928424043, ops: []Op{
		{Kind: PutShareClass, Class: shareSlot, Type: "LoadBalancer", Share: 2},
		{Kind: PutListener, Name: "broker-bootstrap", Class: shareSlot, Ports: []int32{9092, 9093}},
		{Kind: PutStatefulSet, Name: "sts-broker", Class: shareSlot, Ports: []int32{8080, 9092}, Replicas: 2, Bootstrap: "broker-bootstrap"},
		{Kind: PutShareClass, Class: shareSlot, Type: "LoadBalancer", Share: 1},
	}},
	// Found by make robustness (cut by hand from 25 operations): a
	// sharing class narrowed below replica 2's block left that replica's
	// Service as it was, with the external-dns name of the hostname
	// template the class dropped. It keeps its ports and key, and follows
	// the class otherwise (TestSharingShortFollowsClassOtherwise).
	{name: "ServicesFollowTheirClass", seed: 2675258685051132550, ops: []Op{
		{Kind: PutShareClass, Class: shareSlot, Type: "LoadBalancer", Template: 1, Share: 3},
		{Kind: PutStatefulSet, Name: "sts-broker", Class: shareSlot, Ports: []int32{8080}, Replicas: 3},
		{Kind: PutShareClass, Class: shareSlot, Type: "LoadBalancer", Share: 2},
	}},
	// Found by make robustness (cut by hand from 30 operations): a
	// replica beyond the range whose StatefulSet was deleted says Invalid
	// (the StatefulSet is gone), which the operator decides first; the
	// invariant asked for SharedPortsExhausted.
	{name: "SharedPortsShortSaid", seed: 6698280799106914292, ops: []Op{
		{Kind: PutShareClass, Class: shareSlot, Type: "LoadBalancer", Share: 4},
		{Kind: PutStatefulSet, Name: "sts-broker", Class: shareSlot, Ports: []int32{8080, 9092}, Replicas: 3},
		{Kind: DeleteStatefulSet, Name: "sts-broker"},
	}},
	// Found by make robustness (cut by hand from 23 operations): a
	// Listener moved off a full node-port range gave its ports up, but the
	// ports it had been given stayed held from memory for 10 s, and no
	// event woke the pod's Listener that then found the range full: it
	// waited for its 30 s recheck, and a restart made its Service
	// (TestWaitersWokenWhenPortsFreed).
	{name: "RestartWritesNothing", seed: 9269745483677134096, ops: []Op{
		{Kind: PutClass, Class: 1, Type: "NodePort", Range: true},
		{Kind: PutClass, Type: "ClusterIP"},
		{Kind: PutStatefulSet, Tenant: 1, Name: "sts-db", Class: 1, Ports: []int32{8080, 9092}, Replicas: 1},
		{Kind: PutListener, Tenant: 1, Name: "db", Class: 1, Ports: []int32{8080, 9092}},
		{Kind: PutListener, Tenant: 1, Name: "db", Ports: []int32{443}},
		{Kind: PutPod, Tenant: 1, Name: "pod-kafka", Class: 1, Ports: []int32{8080, 9092}},
		{Kind: RestartOperator},
	}},
}

// TestRegressions plays every shrunk history that once broke a promise.
func TestRegressions(t *testing.T) {
	testenv.Require(t, env)
	h := &histories{n: 2000}
	for _, r := range regressions {
		t.Run(fmt.Sprintf("%s/%d", r.name, r.seed), func(t *testing.T) { h.play(t, r.seed, r.ops) })
	}
}

// gatewayRegressions are shrunk histories with Gateways: played only with
// Traefik (-robustness.gateway).
var gatewayRegressions = []struct {
	name string
	seed uint64
	ops  []Op
}{
	// Found by make robustness: a Listener moved to another class keeps
	// a node port of its old class's range; the old class's next Service
	// must not be given that port (the API server refused it, 422, five
	// times). It broke only once the class's memory of the ports it gave
	// (rangeGivenTTL, 10 s) had passed, so it replays clean either way:
	// TestNodePortRangeHeldByMovedListener (reconcile/listener) waits that
	// out and fails without the fix (a range is held by every Listener's
	// Service, whatever its class).
	{name: "QuietAfterSettling", seed: 6407629003257191809, ops: []Op{
		{Kind: PutClass, Type: "NodePort", Range: true, Template: 4, Allow: true, NodeAnnotation: true},
		{Kind: PutClass, Class: 1, Type: "NodePort", Range: true, Allow: true, Network: "private", NodeAnnotation: true},
		{Kind: PutListener, Name: "web", Class: 1, Ports: []int32{80}, Labels: []string{"app.kubernetes.io/name=x"}},
		{Kind: PutGateway, Sections: []string{"p0:All"}},
		{Kind: PutQuota, Tenant: 1},
		{Kind: PutListener, Name: "web", Ports: []int32{443, 80}, Labels: []string{"app.kubernetes.io/name=x", "offlist.robust.test/cost=c"}},
		{Kind: PutPod, Tenant: 1, Name: "pod-web", Class: 1, Ports: []int32{8080}},
	}},
	// Found by make robustness (seed 17144973799700076321, 26 operations
	// as shrunk, cut by hand to these): a Listener that left its gateway
	// class kept its TLSRoute, and the Gateway went on routing its name.
	{name: "RoutesFollowTheirClass", seed: 17144973799700076321, ops: []Op{
		{Kind: PutClass, Type: "LoadBalancer"},
		{Kind: PutGateway, Sections: []string{"p0:All"}},
		{Kind: PutClass, Class: 1, Type: "ClusterIP", Template: 1, Parents: []string{"g0/p0"}},
		{Kind: PutListener, Name: "web", Class: 1, Ports: []int32{80}},
		{Kind: PutListener, Name: "web", Ports: []int32{80}},
		{Kind: PutListener, Tenant: 1, Name: "web", Class: 1, Ports: []int32{80}},
		{Kind: PutListener, Tenant: 1, Name: "web", Class: 1},
	}},
	// A Listener of a gateway class whose spec.className is then unset
	// kept its TLSRoute (issue 49; TestGatewayRoutesLeaveWhenClassUnset in
	// reconcile/listener).
	{name: "RoutesFollowTheirClass", seed: 0, ops: []Op{
		{Kind: PutGateway, Sections: []string{"p0:All"}},
		{Kind: PutClass, Type: "ClusterIP", Template: 1, Parents: []string{"g0/p0"}},
		{Kind: PutListener, Name: "web", Ports: []int32{80}},
		{Kind: PutListener, Name: "web", NoClass: true, Ports: []int32{80}},
	}},
	// Found by make robustness (seed 14550110568753163987, shrunk to 23
	// operations, cut by hand to these): a pod admitted while the webhooks
	// were off, then its class made a gateway class; once they are back,
	// the webhook refuses the claim controller's update of the pod's
	// Listener (422), which it retries with backoff: RefusedWritesVisible
	// demands ClaimApplied WriteRefused, the quiet window leaves the
	// retries out.
	{name: "QuietAfterSettling", seed: 14550110568753163987, ops: []Op{
		{Kind: PutClass, Type: "NodePort", Range: true, Template: 1},
		{Kind: PutGateway, Gateway: 1, Sections: []string{"p0:All", "p1:Selector"}},
		{Kind: WebhooksOff},
		{Kind: PutPod, Tenant: 1, Name: "pod-web", Ports: []int32{8080, 9092}},
		{Kind: PutClass, Type: "ClusterIP", Template: 1, Allow: true, Gate: true, Parents: []string{"g1/p0"}},
		{Kind: WebhooksOn},
	}},
	// Found by make robustness (seed 18154420056734506710, shrunk to 23
	// operations, cut by hand to these): a class of a StatefulSet's
	// replica and a standalone pod's Listener becomes a TCPRoute class of
	// one section; both Listeners pick the free section at once (each
	// before the cache has the other's route), and the one that loses it
	// (GatewaySectionTaken, or GatewaySectionsExhausted) kept its route
	// there: two TCPRoutes attached to one section.
	{name: "TCPSectionsPublishedOnce", seed: 18154420056734506710, ops: []Op{
		{Kind: PutClass, Class: 1, Type: "LoadBalancer"},
		{Kind: PutGateway, Gateway: 1, Sections: []string{"p0:All", "t2:All"}},
		{Kind: PutStatefulSet, Name: "sts-db", Class: 1, Ports: []int32{8080}, Replicas: 1},
		{Kind: PutPod, Name: "pod-db", Class: 1, Ports: []int32{8080}},
		{Kind: PutClass, Class: 1, Type: "ClusterIP", Parents: []string{"g1/t2"}, TCP: true},
	}},
	// Found by make robustness (seed 14394334709108808903, shrunk to 29
	// operations, cut by hand to these): a TCPRoute class made a
	// LoadBalancer class while the webhooks were off, which they would have
	// refused (a gateway class's Services are ClusterIP). Its Listener says
	// Invalid and keeps the Service the valid class made; the invariants
	// judged that Service against the refused class.
	{name: "ServicesFollowTheirClass", seed: 14394334709108808903, ops: []Op{
		{Kind: PutGateway, Sections: []string{"p1:Same", "t1:All"}},
		{Kind: PutClass, Type: "ClusterIP", Parents: []string{"g0/t1"}, TCP: true},
		{Kind: PutListener, Name: "web", Ports: []int32{80}},
		{Kind: WebhooksOff},
		{Kind: PutClass, Type: "LoadBalancer", Parents: []string{"g0/t1"}, TCP: true},
	}},
}

// TestGatewayRegressions plays every shrunk history with Gateways.
func TestGatewayRegressions(t *testing.T) {
	testenv.Require(t, env)
	if cluster.Gateway == nil {
		t.Skip("set -robustness.gateway (Traefik)")
	}
	h := &histories{n: 3000}
	for _, r := range gatewayRegressions {
		t.Run(fmt.Sprintf("%s/%d", r.name, r.seed), func(t *testing.T) { h.play(t, r.seed, r.ops) })
	}
}
