package robustness

import (
	"math/rand/v2"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Shared load balancers (docs/reconcile.md, "Shared load balancers"): the
// administrator puts the world's sharing slot as a LoadBalancer class with
// spec.loadBalancerSharing (ranges sometimes too small for replicas ×
// ports, narrowed, switched to a plain LoadBalancer class and back), and
// the tenants run StatefulSets of it (scaled 0 to 3) whose pods share a
// bootstrap Listener, and standalone Listeners of it.
//
// These operations are drawn from a stream of their own and come in
// addition to a history's n operations (GenerateWith), and they act only
// on the sharing slot and names the other operations never use, so that
// the other operations of a seed, and what they meet, stay as they are.

// PutShareClass is the administrator putting the sharing slot: a
// LoadBalancer class with spec.loadBalancerSharing of Share ports, or a
// plain LoadBalancer class when Share is 0.
const PutShareClass Kind = "PutShareClass"

// shareSlot is the class slot of PutShareClass: beyond classSlots, so that
// no other operation picks it.
const shareSlot = classSlots

// The names the sharing operations use (none of listenerNames'): the
// tenants' StatefulSet, the Listener its pods share, and a Listener no pod
// mounts.
const (
	shareStatefulSet = "sts-broker"
	shareBootstrap   = "broker-bootstrap"
	shareLone        = "broker-lone"
)

// shareOdds: after one operation in shareOdds comes a sharing operation.
const shareOdds = 5

// shareFrom is the first Service port of every sharing range.
const shareFrom = 9000

// ShareRange is the sharing range of size ports.
func ShareRange(size int) v1alpha1.LoadBalancerSharing {
	return v1alpha1.LoadBalancerSharing{From: shareFrom, To: shareFrom + int32(size) - 1}
}

// shareModel is what the generator knows of the sharing operations.
type shareModel struct {
	steps  int // sharing operations drawn so far
	size   int // the sharing slot's range (0: plain LoadBalancer or none)
	tenant int // whose bootstrap the first three made
}

// genShare is the sharing operation after an operation, ok false when r
// says none. The first three of a history are the class, the bootstrap
// Listener and the StatefulSet whose pods share it (what a Kafka on such a
// class is), so that a short history reaches sharing at all.
func genShare(r *rand.Rand, m *shareModel) (Op, bool) {
	if r.IntN(shareOdds) != 0 {
		return Op{}, false
	}
	t := r.IntN(2)
	step := m.steps
	m.steps++
	switch {
	case step == 0:
		return m.putClass(r, 2+2*r.IntN(3)), true
	case step == 1:
		m.tenant = t
		return shareListener(r, t, shareBootstrap), true
	case step == 2:
		return shareStatefulSetOp(r, m.tenant), true // the bootstrap's tenant
	}
	switch x := r.IntN(12); {
	case x < 2:
		size := 0 // to a plain LoadBalancer class
		switch {
		case m.size > 1 && r.IntN(2) == 0:
			size = 1 + r.IntN(m.size-1) // narrowed
		case m.size == 0 || r.IntN(2) == 0:
			size = 1 + r.IntN(8) // sharing again, 1 port to 8
		}
		return m.putClass(r, size), true
	case x < 4:
		return shareStatefulSetOp(r, t), true
	case x < 7:
		return Op{Kind: ScaleStatefulSet, Tenant: t, Name: shareStatefulSet, Replicas: r.IntN(4)}, true
	case x < 8:
		return Op{Kind: DeleteStatefulSet, Tenant: t, Name: shareStatefulSet}, true
	case x < 10:
		return shareListener(r, t, shareBootstrap), true
	case x < 11:
		return shareListener(r, t, shareLone), true
	}
	return Op{Kind: DeleteListener, Tenant: t, Name: shareBootstrap}, true
}

// putClass is a PutShareClass of a range of size ports, with a hostname
// template, tenant-metadata mode and class-set network now and then.
func (m *shareModel) putClass(r *rand.Rand, size int) Op {
	m.size = size
	op := Op{Kind: PutShareClass, Class: shareSlot, Type: v1alpha1.ServiceTypeLoadBalancer, Share: size}
	if r.IntN(2) == 0 {
		op.Template = 1
	}
	op.Mode = pick(r, []v1alpha1.TenantMetadataMode{"", v1alpha1.TenantMetadataEnforce, v1alpha1.TenantMetadataWarn})
	if r.IntN(3) == 0 {
		op.Network = "internal"
	}
	return op
}

// shareListener is tenant t's Listener name of the sharing slot: one or
// two ports, and now and then a hostile override of the sharing key (the
// other tenant's workload's key, or one across namespaces), of the traffic
// policy or of the key's addresses.
func shareListener(r *rand.Rand, t int, name string) Op {
	op := Op{Kind: PutListener, Tenant: t, Name: name, Class: shareSlot, Ports: []int32{9092, 9093}[:1+r.IntN(2)]}
	if r.IntN(2) == 0 {
		op.Overrides = append(op.Overrides, pick(r, []string{
			"annotations:" + v1alpha1.AnnotationMetalLBSharedIP + "=" + otherKey,
			"annotations:" + v1alpha1.AnnotationCiliumSharingKey + "=" + otherKey,
			"annotations:lbipam.cilium.io/sharing-cross-namespace=*",
			"annotations:metallb.io/loadBalancerIPs=203.0.113.99",
			"spec:externalTrafficPolicy=Local",
		}))
	}
	return op
}

// otherKey stands for the sharing key of the other tenant's StatefulSet in
// an override (World.Listener fills it in).
const otherKey = "{other}/" + shareStatefulSet

// shareStatefulSetOp is tenant t's StatefulSet of the sharing slot: 1 to
// 3 replicas of one or two ports, its pods sharing the bootstrap Listener
// two times in three.
func shareStatefulSetOp(r *rand.Rand, t int) Op {
	op := Op{Kind: PutStatefulSet, Tenant: t, Name: shareStatefulSet, Class: shareSlot, Replicas: 1 + r.IntN(3), Ports: podPorts(r)}
	if r.IntN(3) > 0 {
		op.Bootstrap = shareBootstrap
	}
	return op
}

// shareOverrides are op's overrides with otherKey's namespace filled in.
func (w World) shareOverrides(op Op) []string {
	out := make([]string, len(op.Overrides))
	for i, o := range op.Overrides {
		out[i] = strings.ReplaceAll(o, "{other}", w.Tenants[1-op.Tenant])
	}
	return out
}

// shareSpec sets spec.loadBalancerSharing for op.Share.
func shareSpec(op Op, spec *v1alpha1.ListenerClassSpec) {
	if op.Share > 0 {
		r := ShareRange(op.Share)
		spec.LoadBalancerSharing = &r
	}
}

// bootstrapVolume is the volume the bootstrap Listener's pods share (a
// generic ephemeral claim naming the Listener), mounted where Stackable's
// operators mount theirs.
const bootstrapVolume = "listener-bootstrap"

// addBootstrap gives sts's pods op.Bootstrap, the Listener they share (a
// claim of each pod naming it: what a Kafka's bootstrap is), and, as
// Stackable's operators write it, their per-replica listener claim
// template of the class: the webhook adds none to a StatefulSet that has a
// listener volume already.
func addBootstrap(sts *appsv1.StatefulSet, op Op) {
	if op.Bootstrap == "" {
		return
	}
	claim := (World{}).Claim(Op{})
	sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.VolumeName, Annotations: claims.StatefulSetTemplateAnnotations(
			map[string]string{v1alpha1.AnnotationListenerClass: classOfStatefulSet(sts)})},
		Spec: claim.Spec,
	})
	claim.Annotations = map[string]string{v1alpha1.AnnotationListenerName: op.Bootstrap}
	pod := &sts.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: bootstrapVolume, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: claim.Annotations}, Spec: claim.Spec,
		}},
	}})
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: bootstrapVolume, MountPath: "/stackable/listener-bootstrap", ReadOnly: true})
}

// shareStream is the constant of the sharing operations' random stream:
// one that gives the fixed seeds few of them (four), away from where seeds
// 1 and 17 find the mutants, and the whole of a Kafka on the class in a
// namespace no quota caps then (seed 1957: the class, the bootstrap
// Listener, a StatefulSet whose pods share it; seed 1: a class last).
const shareStream = 0x4b2b

// classOfStatefulSet is the class sts names (World.StatefulSet's).
func classOfStatefulSet(sts *appsv1.StatefulSet) string {
	class, _ := claims.Named(sts.Annotations)
	return class
}
