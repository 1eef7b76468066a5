package robustness

import (
	"math/rand/v2"
)

// workloadOperations are the generator's entries for nodes, pods and
// StatefulSets (operations()).
func workloadOperations() []weighted {
	return []weighted{
		{1, genNodeAddress},
		{3, genPutPod},
		{1, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: DeletePod, Tenant: t, Name: m.workload(r, t, "pod-", true)}
		}},
		{3, genPutStatefulSet},
		{2, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: ScaleStatefulSet, Tenant: t, Name: m.workload(r, t, "sts-", true), Replicas: r.IntN(4)}
		}},
		{1, func(r *rand.Rand, m *model) Op {
			t := r.IntN(2)
			return Op{Kind: DeleteStatefulSet, Tenant: t, Name: m.workload(r, t, "sts-", true)}
		}},
	}
}

// workload picks a pod or StatefulSet name (prefix "pod-" or "sts-") of
// tenant t: mostly one that exists when existing says so.
func (m *model) workload(r *rand.Rand, t int, prefix string, existing bool) string {
	return m.name(r, t, prefix, existing)
}

// genNodeAddress is the administrator setting a node's address
// annotation: an IPv4 address, both families, a DNS name, one that is not
// an address (NodePort classes that read it fall back to the status), or
// none.
func genNodeAddress(r *rand.Rand, m *model) Op {
	addrs := []string{"203.0.113.7", "203.0.113.8,2001:db8::8", "node-x.robust.test", "not an address!", ""}
	return Op{Kind: PutNodeAddress, Node: r.IntN(nodeCount), Address: pick(r, addrs)}
}

// genPutPod is a tenant's standalone pod: mostly an ephemeral listener
// volume of a class, sometimes the volume of a listener claim it made.
func genPutPod(r *rand.Rand, m *model) Op {
	t := r.IntN(2)
	op := Op{Kind: PutPod, Tenant: t, Name: m.workload(r, t, "pod-", false), Class: m.slot(r), Ports: podPorts(r)}
	if r.IntN(3) == 0 {
		op.Class, op.Claim = 0, m.name(r, t, "claim-", true)
	}
	return op
}

// genPutStatefulSet is a tenant's opted-in StatefulSet; under a name used
// before, it is the StatefulSet recreated over the claims its pods left.
func genPutStatefulSet(r *rand.Rand, m *model) Op {
	t := r.IntN(2)
	return Op{Kind: PutStatefulSet, Tenant: t, Name: m.workload(r, t, "sts-", r.IntN(2) == 0), Class: m.slot(r), Replicas: 1 + r.IntN(2), Ports: podPorts(r)}
}

// podPorts are a pod's container ports (a per-claim Listener's ports).
func podPorts(r *rand.Rand) []int32 {
	ports := []int32{8080, 9092, 443}
	return ports[:1+r.IntN(2)]
}
