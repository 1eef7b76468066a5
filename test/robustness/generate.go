package robustness

import (
	"math/rand/v2"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// classSlots is how many classes a history uses; Listeners and claims pick
// among them (a slot may not exist: its Listeners say so).
const classSlots = 4

// listenerNames are the names tenants give Listeners and claims: few, so
// that operations meet (the same name in both tenants, replaced, deleted
// and recreated).
var listenerNames = []string{"web", "db", "kafka"}

// weighted is one kind of operation and how often the generator picks it.
type weighted struct {
	weight int
	make   func(r *rand.Rand) Op
}

// operations are the generator's table: what each actor does, how often.
func operations() []weighted {
	return []weighted{
		{6, genPutClass},
		{1, func(r *rand.Rand) Op { return Op{Kind: DeleteClass, Class: r.IntN(classSlots)} }},
		{1, func(r *rand.Rand) Op {
			return Op{Kind: DeleteService, Tenant: r.IntN(2), Name: pick(r, listenerNames)}
		}},
		{10, genPutListener},
		{2, func(r *rand.Rand) Op {
			return Op{Kind: DeleteListener, Tenant: r.IntN(2), Name: pick(r, listenerNames)}
		}},
		{3, func(r *rand.Rand) Op {
			return Op{Kind: PutClaim, Tenant: r.IntN(2), Name: "claim-" + pick(r, listenerNames),
				Class: r.IntN(classSlots), Labels: tenantKeys(r, "")}
		}},
		{1, func(r *rand.Rand) Op { return Op{Kind: DeleteClaim, Tenant: r.IntN(2), Name: "claim-" + pick(r, listenerNames)} }},
	}
}

// Generate returns n operations drawn from seed: the same seed gives the
// same history. It starts with one class, so that the first tenants'
// operations have something to use.
func Generate(seed uint64, n int) []Op {
	r := rand.New(rand.NewPCG(seed, 0x49))
	table := operations()
	total := 0
	for _, w := range table {
		total += w.weight
	}
	ops := make([]Op, 0, n)
	for len(ops) < n {
		if len(ops) == 0 {
			ops = append(ops, genPutClass(r))
			continue
		}
		x := r.IntN(total)
		for _, w := range table {
			if x < w.weight {
				ops = append(ops, w.make(r))
				break
			}
			x -= w.weight
		}
	}
	return ops
}

func genPutClass(r *rand.Rand) Op {
	types := []v1alpha1.ServiceType{v1alpha1.ServiceTypeClusterIP, v1alpha1.ServiceTypeNodePort, v1alpha1.ServiceTypeLoadBalancer}
	op := Op{Kind: PutClass, Class: r.IntN(classSlots), Type: pick(r, types)}
	if op.Type != v1alpha1.ServiceTypeClusterIP && r.IntN(2) == 0 {
		op.Range = true
	}
	if r.IntN(3) > 0 {
		op.Template = 1 + r.IntN(len(templates))
	}
	op.Mode = pick(r, []v1alpha1.TenantMetadataMode{"", "", v1alpha1.TenantMetadataEnforce, v1alpha1.TenantMetadataWarn, v1alpha1.TenantMetadataWarn})
	op.Allow = r.IntN(2) == 0
	if r.IntN(3) == 0 {
		op.Network = pick(r, []string{"internal", "private"})
	}
	return op
}

func genPutListener(r *rand.Rand) Op {
	op := Op{Kind: PutListener, Tenant: r.IntN(2), Name: pick(r, listenerNames), Class: r.IntN(classSlots)}
	for range r.IntN(3) {
		op.Ports = append(op.Ports, pick(r, []int32{80, 443, 8080, 9092}))
	}
	op.Labels = tenantKeys(r, "")
	if r.IntN(2) == 0 {
		for _, kv := range tenantKeys(r, "annotations:") {
			op.Overrides = append(op.Overrides, kv)
		}
		for _, kv := range tenantKeys(r, "labels:") {
			op.Overrides = append(op.Overrides, kv)
		}
		if r.IntN(6) == 0 {
			op.Overrides = append(op.Overrides, pick(r, []string{"spec:sessionAffinity=ClientIP", "spec:externalTrafficPolicy=Local"}))
		}
	}
	return op
}

// tenantKeys are zero to two "key=value" entries (after prefix) from what
// tenants write: keys every class allows, keys a class may allow
// (teamPrefix), keys none allows, and exposure keys.
func tenantKeys(r *rand.Rand, prefix string) []string {
	keys := []string{"team=a", "app.kubernetes.io/name=x", teamPrefix + "owner=b", offListPrefix + "cost=c", networkKey + "=public", "io.cilium/pool=public"}
	var out []string
	for range r.IntN(3) {
		out = append(out, prefix+pick(r, keys))
	}
	return out
}

// offListPrefix is the prefix of keys no class lets tenants set.
const offListPrefix = "offlist.robust.test/"

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }
