package robustness

import (
	"math/rand/v2"
	"strings"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// classSlots is how many classes a history uses; Listeners and claims pick
// among them (a slot may not exist: its Listeners say so).
const classSlots = 4

// listenerNames are the names tenants give Listeners and claims: few, so
// that operations meet (the same name in both tenants, replaced, deleted
// and recreated).
var listenerNames = []string{"web", "db", "kafka"}

// model is what the generator knows of the history so far, so that most
// operations act on something that exists (a Listener of a class that was
// made, a delete of a Listener that is there) and some do not.
type model struct {
	classes   map[int]Op        // the last PutClass of each slot that exists
	listeners [2]map[string]int // by tenant, name to class slot; claims under their names
	// webhooksOff: a WebhooksOff without its WebhooksOn yet.
	webhooksOff bool
	// quota: the tenant whose namespace a PutQuota caps (-1: none);
	// quotaMet: that tenant has acted since, so that the cap met a write.
	quota    int
	quotaMet bool
	// gateways are the sections of each Gateway slot put (gateway.go).
	gateways map[int][]string
}

// slot picks a class slot: mostly one that exists.
func (m *model) slot(r *rand.Rand) int {
	var have []int
	for i := range classSlots {
		if _, ok := m.classes[i]; ok {
			have = append(have, i)
		}
	}
	if len(have) == 0 || r.IntN(10) == 0 {
		return r.IntN(classSlots)
	}
	return pick(r, have)
}

// name picks a name of tenant t: mostly one in use when existing says so.
func (m *model) name(r *rand.Rand, t int, prefix string, existing bool) string {
	var have []string
	for _, n := range listenerNames {
		if _, ok := m.listeners[t][prefix+n]; ok {
			have = append(have, prefix+n)
		}
	}
	if existing && len(have) > 0 && r.IntN(5) > 0 {
		return pick(r, have)
	}
	return prefix + pick(r, listenerNames)
}

// weighted is one kind of operation and how often the generator picks it.
type weighted struct {
	weight int
	make   func(r *rand.Rand, m *model) Op
}

// operations are the generator's table: what each actor does, how often.
func operations() []weighted {
	return append([]weighted{
		{3, func(r *rand.Rand, m *model) Op { return genPutClass(r, r.IntN(classSlots)) }},
		{4, genReviseClass},
		{1, func(r *rand.Rand, m *model) Op { return Op{Kind: DeleteClass, Class: m.slot(r)} }},
		{1, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: DeleteService, Tenant: t, Name: m.name(r, t, "", true)}
		}},
		{10, genPutListener},
		{3, genMirror},
		{2, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: DeleteListener, Tenant: t, Name: m.name(r, t, "", true)}
		}},
		{2, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: PutClaim, Tenant: t, Name: m.name(r, t, "claim-", false), Class: m.slot(r), Labels: tenantKeys(r, "")}
		}},
		{1, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: DeleteClaim, Tenant: t, Name: m.name(r, t, "claim-", true)}
		}},
	}, workloadOperations()...)
}

// Generate returns n operations drawn from seed: the same seed gives the
// same history. It starts with two classes, so that the first tenants'
// operations have something to use.
func Generate(seed uint64, n int) []Op { return GenerateWith(seed, n, false) }

// GenerateWith is Generate, with Gateways and gateway classes among the
// operations when withGateway (Traefik runs): drawn from a stream of their
// own, so that the other operations of a seed stay as they are.
func GenerateWith(seed uint64, n int, withGateway bool) []Op {
	r := rand.New(rand.NewPCG(seed, 0x49))
	// Faults are drawn from a stream of their own, so that a change of
	// the table leaves where they fall alone; its constant is one that
	// gives the fixed seeds (1, 17) a restart and the webhooks off and on.
	fr := rand.New(rand.NewPCG(seed, 0x107))
	// Quotas too (quota.go), so that they leave the rest alone.
	qr := rand.New(rand.NewPCG(seed, 0x4a))
	gr := rand.New(rand.NewPCG(seed, 0x39))
	// Whether a class gates its pods (gateClass) and a Listener names no
	// class.
	pr := rand.New(rand.NewPCG(seed, 0x50))
	// Sharing operations (share.go) come after some operations, in
	// addition to the n: the others' streams draw as without them.
	sr := rand.New(rand.NewPCG(seed, shareStream))
	share := &shareModel{}
	table := operations()
	total := 0
	for _, w := range table {
		total += w.weight
	}
	m := &model{classes: map[int]Op{}, listeners: [2]map[string]int{{}, {}}, quota: -1, gateways: map[int][]string{}}
	ops := make([]Op, 0, n)
	for made := 0; made < n; made++ {
		var op Op
		if made < 2 {
			op = genPutClass(r, made)
		} else if m.webhooksOff && fr.IntN(4) == 0 {
			op = Op{Kind: WebhooksOn} // off for a few operations
		} else if q, ok := genQuota(qr, m); ok {
			op = q
		} else if withGateway && gr.IntN(gatewayOdds) == 0 {
			op = genGateway(gr, m)
		} else if fr.IntN(faultOdds) == 0 {
			op = genFault(fr, m)
		} else {
			x := r.IntN(total)
			for _, w := range table {
				if x < w.weight {
					op = w.make(r, m)
					break
				}
				x -= w.weight
			}
		}
		switch op.Kind {
		case PutClass:
			op.Gate = m.gateClass(pr, op.Class)
		case PutListener:
			// One in twelve names no class: a Listener of a gateway
			// class whose className is unset leaves its routes.
			op.NoClass = pr.IntN(12) == 0
		}
		m.record(op)
		ops = append(ops, op)
		if s, ok := genShare(sr, share); ok {
			ops = append(ops, s)
		}
	}
	return ops
}

// record updates the model with what op does if it is accepted.
func (m *model) record(op Op) {
	switch op.Kind {
	case PutClass:
		m.classes[op.Class] = op
	case DeleteClass:
		delete(m.classes, op.Class)
	case PutListener, PutClaim, PutPod, PutStatefulSet:
		m.listeners[op.Tenant][op.Name] = op.Class
	case DeleteListener, DeleteClaim, DeletePod, DeleteStatefulSet:
		delete(m.listeners[op.Tenant], op.Name)
	case WebhooksOff, WebhooksOn:
		m.webhooksOff = op.Kind == WebhooksOff
	case PutQuota:
		m.quota, m.quotaMet = op.Tenant, false
	case LiftQuota:
		m.quota = -1
	case PutGateway:
		m.gateways[op.Gateway] = op.Sections
	case DeleteGateway:
		delete(m.gateways, op.Gateway)
	}
	if isTenantOp(op.Kind) && op.Tenant == m.quota {
		m.quotaMet = true
	}
}

// gateClass says whether a PutClass of slot gives the class
// spec.podReadiness Gate: a new class one time in three; a class that
// exists keeps its choice, or switches it one time in four (pods made
// before keep the gate they were given).
func (m *model) gateClass(r *rand.Rand, slot int) bool {
	prev, ok := m.classes[slot]
	if !ok {
		return r.IntN(3) == 0
	}
	return prev.Gate != (r.IntN(4) == 0)
}

func genPutClass(r *rand.Rand, slot int) Op {
	types := []v1alpha1.ServiceType{v1alpha1.ServiceTypeClusterIP, v1alpha1.ServiceTypeNodePort, v1alpha1.ServiceTypeLoadBalancer}
	op := Op{Kind: PutClass, Class: slot, Type: pick(r, types)}
	if op.Type != v1alpha1.ServiceTypeClusterIP && r.IntN(2) == 0 {
		op.Range = true
	}
	if r.IntN(3) > 0 {
		op.Template = pick(r, []int{1, 2, 3, 4, 4, 4})
	}
	op.Mode = pick(r, []v1alpha1.TenantMetadataMode{"", "", v1alpha1.TenantMetadataEnforce, v1alpha1.TenantMetadataWarn, v1alpha1.TenantMetadataWarn})
	op.Allow = r.IntN(2) == 0
	if r.IntN(3) == 0 {
		op.Network = pick(r, []string{"internal", "private"})
	}
	op.NodeAnnotation = op.Type == v1alpha1.ServiceTypeNodePort && r.IntN(2) == 0
	return op
}

// genReviseClass is the administrator changing one field of a class that
// exists (a PutClass of the whole class, so that a history reads alone).
func genReviseClass(r *rand.Rand, m *model) Op {
	slot := m.slot(r)
	op, ok := m.classes[slot]
	if !ok {
		return genPutClass(r, slot)
	}
	fresh := genPutClass(r, slot)
	switch r.IntN(5) {
	case 0:
		op.Network = map[bool]string{true: "", false: pick(r, []string{"internal", "private"})}[op.Network != ""]
	case 1:
		op.Mode = fresh.Mode
	case 2:
		op.Allow = !op.Allow
	case 3:
		op.Template = fresh.Template
	default:
		op.Type, op.Range = fresh.Type, fresh.Range
	}
	return op
}

// genMirror is a tenant making a Listener of the name and class the other
// tenant has one of: where two namespaces meet (a hostname template
// without {namespace}, a shared node-port range).
func genMirror(r *rand.Rand, m *model) Op {
	t := r.IntN(2)
	op := genPutListener(r, m)
	op.Tenant = t
	// Prefer a Listener whose class renders names without the namespace:
	// the same name in both namespaces is then one hostname.
	best := -1
	for _, n := range listenerNames {
		c, ok := m.listeners[1-t][n]
		if !ok {
			continue
		}
		score := 0
		if cl, ok := m.classes[c]; ok && cl.Template > 0 && templates[cl.Template-1].withoutNamespace {
			score = 1
		}
		if score > best {
			best, op.Name, op.Class = score, n, c
		}
	}
	return op
}

func genPutListener(r *rand.Rand, m *model) Op {
	t := r.IntN(2)
	op := Op{Kind: PutListener, Tenant: t, Name: m.name(r, t, "", r.IntN(2) == 0), Class: m.slot(r)}
	n := 1 + r.IntN(2)
	if r.IntN(8) == 0 {
		n = 0 // no ports: the Listener says it is Invalid
	}
	ports := []int32{80, 443, 8080, 9092}
	r.Shuffle(len(ports), func(i, j int) { ports[i], ports[j] = ports[j], ports[i] })
	if n > 0 {
		op.Ports = ports[:n]
	}
	op.Labels = tenantKeys(r, "")
	if r.IntN(3) == 0 {
		// Most overrides are what a tenant may write; an exposure key
		// (refused at admission) now and then.
		for _, where := range []string{"annotations:", "labels:"} {
			for _, kv := range tenantKeys(r, where) {
				if !strings.Contains(kv, "pool=") || r.IntN(4) == 0 {
					op.Overrides = append(op.Overrides, kv)
				}
			}
		}
		if r.IntN(6) == 0 {
			op.Overrides = append(op.Overrides, pick(r, []string{"spec:sessionAffinity=ClientIP", "spec:externalTrafficPolicy=Local"}))
		}
	}
	// A hostile tenant tries to take over what its class sets itself.
	if c, ok := m.classes[op.Class]; ok && c.Network != "" && r.IntN(2) == 0 {
		op.Overrides = append(op.Overrides, "annotations:"+networkKey+"=public")
	}
	return op
}

// tenantKeys are zero to two "key=value" entries (after prefix) from what
// tenants write: keys every class allows, keys a class may allow
// (teamPrefix), keys none allows, and exposure keys.
func tenantKeys(r *rand.Rand, prefix string) []string {
	keys := []string{"team=a", "app.kubernetes.io/part-of=x", teamPrefix + "owner=b", offListPrefix + "cost=c", networkKey + "=public", "io.cilium/pool=public"}
	if prefix == "" {
		// The operator's own label: superseded on the Service (refused
		// in objectOverrides, so only on the Listener or claim).
		keys[1] = "app.kubernetes.io/name=x"
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var out []string
	for _, k := range keys[:r.IntN(3)] {
		out = append(out, prefix+k)
	}
	return out
}

// offListPrefix is the prefix of keys no class lets tenants set.
const offListPrefix = "offlist.robust.test/"

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// faultOdds: one operation in faultOdds is a fault.
const faultOdds = 12

// genFault is the administrator's fault: the operator restarted, or the
// webhooks switched off (Generate switches them on again a few operations
// later).
func genFault(r *rand.Rand, m *model) Op {
	if !m.webhooksOff && r.IntN(2) == 0 {
		return Op{Kind: WebhooksOff}
	}
	return Op{Kind: RestartOperator}
}

// quotaOdds: one operation in quotaOdds caps a tenant's Services.
const quotaOdds = 20

// genQuota is the administrator capping a tenant's Services at what it
// has (a quota: the operator's writes of new Services and node ports are
// refused) and lifting the cap again a few operations after the tenant
// acted; ok false
// when r says neither now.
func genQuota(r *rand.Rand, m *model) (Op, bool) {
	if m.quota >= 0 {
		return Op{Kind: LiftQuota, Tenant: m.quota}, m.quotaMet && r.IntN(3) == 0
	}
	return Op{Kind: PutQuota, Tenant: r.IntN(2)}, r.IntN(quotaOdds) == 0
}
