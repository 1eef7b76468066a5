package nodeloss

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// fixture is one test's namespace, class and nodes.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client
	ns    string
	class string
}

func newFixture(t *testing.T, loss *v1alpha1.PinnedNodeLoss) *fixture {
	t.Helper()
	return newFixtureIn(t, "nl-", loss)
}

// newFixtureIn is newFixture in a namespace named prefix and random
// characters.
func newFixtureIn(t *testing.T, prefix string, loss *v1alpha1.PinnedNodeLoss) *fixture {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, prefix)
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-pinned"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true), PinnedNodeLoss: loss,
	}}
	if err := e.Client.Create(ctx, class); err != nil {
		t.Fatalf("create class: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(ctx), class) })
	return &fixture{t: t, ctx: ctx, c: e.Client, ns: ns, class: class.Name}
}

// node creates a Node with a Ready condition of the given status and an
// InternalIP, as a kubelet would.
func (f *fixture) node(name string, ready corev1.ConditionStatus, ip string) *corev1.Node {
	f.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.TopologyKeyHostname: name}}}
	if err := f.c.Create(f.ctx, n); err != nil {
		f.t.Fatalf("create node: %v", err)
	}
	f.t.Cleanup(func() { _ = f.c.Delete(context.WithoutCancel(f.ctx), n) })
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "Test"}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	if err := f.c.Status().Update(f.ctx, n); err != nil {
		f.t.Fatalf("node status: %v", err)
	}
	return n
}

// statefulSet creates StatefulSet web (OnDelete updates, so the test decides
// when pods are replaced) with a listener claim template of the fixture's
// class and a data claim template of another storage class. pinTo, if set,
// gives its pods the node affinity the pod webhook adds to pods of a pinned
// claim.
func (f *fixture) statefulSet(pinTo string) *appsv1.StatefulSet {
	f.t.Helper()
	claim := func(name, sc string, ann map[string]string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(sc), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		}}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1), ServiceName: "web",
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1",
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "listener", MountPath: v1alpha1.MountPath}, {Name: "data", MountPath: "/data"}}}}},
		},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{
			claim("listener", v1alpha1.StorageClassName, map[string]string{v1alpha1.AnnotationListenerClass: f.class}),
			claim("data", "local-disks", nil),
		},
	}}
	if pinTo != "" {
		sts.Spec.Template.Spec.Affinity = requireNode(pinTo)
	}
	if err := f.c.Create(f.ctx, sts); err != nil {
		f.t.Fatalf("create statefulset: %v", err)
	}
	return sts
}

func requireNode(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
}

// unpinTemplate removes the node affinity from the StatefulSet's template:
// the existing pod keeps it, as a pod admitted by the webhook would, and
// pods created from now on lack it (the webhook would add none for a claim
// that is not bound yet).
func (f *fixture) unpinTemplate(sts *appsv1.StatefulSet) {
	f.t.Helper()
	testenv.Converges(f.t, "unpin template", func() error {
		cur := &appsv1.StatefulSet{}
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sts), cur); err != nil {
			return err
		}
		cur.Spec.Template.Spec.Affinity = nil
		return f.c.Update(f.ctx, cur)
	})
}

func (f *fixture) get(name string, obj client.Object) error {
	return f.c.Get(f.ctx, types.NamespacedName{Namespace: f.ns, Name: name}, obj)
}

// waitClaim waits for the StatefulSet's claim and returns it.
func (f *fixture) waitClaim(name string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	testenv.Converges(f.t, "claim "+name, func() error { return f.get(name, pvc) })
	return pvc
}

// bind plays the provisioner and the volume binder: a PersistentVolume of
// driver with node affinity to node on key, bound to the claim.
func (f *fixture) bind(pvc *corev1.PersistentVolumeClaim, driver, key, node string) *corev1.PersistentVolume {
	f.t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + string(pvc.UID)}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
		AccessModes:                   pvc.Spec.AccessModes,
		StorageClassName:              *pvc.Spec.StorageClassName,
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + string(pvc.UID)}},
		ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
	}}
	if err := f.c.Create(f.ctx, pv); err != nil {
		f.t.Fatalf("create volume: %v", err)
	}
	f.t.Cleanup(func() { _ = f.c.Delete(context.WithoutCancel(f.ctx), pv) })
	testenv.Converges(f.t, "bind claim "+pvc.Name, func() error {
		cur := &corev1.PersistentVolumeClaim{}
		if err := f.get(pvc.Name, cur); err != nil {
			return err
		}
		cur.Spec.VolumeName = pv.Name
		return f.c.Update(f.ctx, cur)
	})
	return pv
}

// events are the notes of the events regarding the object with uid.
func (f *fixture) events(uid types.UID, reason string) []string {
	var list eventsv1.EventList
	if err := f.c.List(f.ctx, &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// waitEvent waits for an event of reason on the object whose note says all
// of says.
func (f *fixture) waitEvent(what string, uid types.UID, reason string, says ...string) {
	f.t.Helper()
	testenv.Converges(f.t, what, func() error {
		notes := f.events(uid, reason)
		for _, n := range notes {
			ok := true
			for _, s := range says {
				ok = ok && strings.Contains(n, s)
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("%s events: %q", reason, notes)
	})
}

// waitListener waits for the claim's Listener and its node port.
func (f *fixture) waitListener(name string) (*v1alpha1.Listener, int32) {
	f.t.Helper()
	l := &v1alpha1.Listener{}
	var nodePort int32
	testenv.Converges(f.t, "listener "+name+" with a Service", func() error {
		if err := f.get(name, l); err != nil {
			return err
		}
		svc := &corev1.Service{}
		if err := f.get(l.Status.ServiceName, svc); err != nil {
			return fmt.Errorf("service %q: %w", l.Status.ServiceName, err)
		}
		if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].NodePort == 0 {
			return fmt.Errorf("no node port yet")
		}
		nodePort = svc.Spec.Ports[0].NodePort
		return nil
	})
	return l, nodePort
}

func pinCondition(l *v1alpha1.Listener) *metav1.Condition {
	return meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionPinnedNodesAvailable)
}

// TestReleaseWhenPinnedNodeIsDeleted: the default policy. A StatefulSet's
// replica is Pending and pinned (volume and pod affinity) to node B; node B
// is deleted. The listener claim is released, the pod recreated without the
// pin, the Listener kept (name, UID, node port) for the new claim, and the
// data claim untouched.
func TestReleaseWhenPinnedNodeIsDeleted(t *testing.T) {
	f := newFixture(t, nil)
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.0.2")
	f.node(f.ns+"-a", corev1.ConditionTrue, "10.9.0.1")
	sts := f.statefulSet(b.Name)
	listenerClaim := f.waitClaim("listener-web-0")
	dataClaim := f.waitClaim("data-web-0")
	pod := &corev1.Pod{}
	testenv.Converges(t, "pod web-0", func() error { return f.get("web-0", pod) })
	f.unpinTemplate(sts)
	f.bind(listenerClaim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	f.bind(dataClaim, "local.csi.example", corev1.LabelHostname, b.Name)
	l, nodePort := f.waitListener("listener-web-0")
	releasedBefore := testutil.ToFloat64(releasesTotal.WithLabelValues("NodeDeleted"))

	deletedAt := time.Now().Truncate(time.Second)
	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}

	f.waitEvent("Released event on the claim", listenerClaim.UID, v1alpha1.ReasonReleased, b.Name+", which no longer exists", "keeps its name and node ports")
	f.waitEvent("PodRecreated event on the pod", pod.UID, v1alpha1.ReasonPodRecreated, "requires node "+b.Name)
	newPod := &corev1.Pod{}
	testenv.Converges(t, "web-0 recreated without the pin", func() error {
		if err := f.get("web-0", newPod); err != nil {
			return err
		}
		if newPod.UID == pod.UID {
			return fmt.Errorf("still the old pod")
		}
		if got := claims.PinnedNodes(newPod); len(got) != 0 {
			return fmt.Errorf("new pod requires %v", got)
		}
		return nil
	})
	newClaim := &corev1.PersistentVolumeClaim{}
	testenv.Converges(t, "listener claim recreated", func() error {
		if err := f.get("listener-web-0", newClaim); err != nil {
			return err
		}
		if newClaim.UID == listenerClaim.UID {
			return fmt.Errorf("still the old claim")
		}
		return nil
	})
	testenv.Converges(t, "Listener kept and adopted by the new claim", func() error {
		cur := &v1alpha1.Listener{}
		if err := f.get(l.Name, cur); err != nil {
			return err
		}
		if cur.UID != l.UID {
			return fmt.Errorf("Listener was recreated (uid %s, was %s)", cur.UID, l.UID)
		}
		if !metav1.IsControlledBy(cur, newClaim) {
			return fmt.Errorf("controller %+v, annotations %v; want the new claim %s", metav1.GetControllerOf(cur), cur.Annotations, newClaim.UID)
		}
		return nil
	})
	if _, got := f.waitListener(l.Name); got != nodePort {
		t.Errorf("node port %d after release, want %d (kept)", got, nodePort)
	}
	// The handover timeout counts from the release, which the Listener
	// records.
	released := &v1alpha1.Listener{}
	if err := f.get(l.Name, released); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(time.RFC3339, released.Annotations[v1alpha1.AnnotationReleasedAt]); err != nil || at.Before(deletedAt) || at.After(time.Now()) {
		t.Errorf("%s = %q (%v), want the time of the release, after %s", v1alpha1.AnnotationReleasedAt, released.Annotations[v1alpha1.AnnotationReleasedAt], err, deletedAt.Format(time.RFC3339))
	}
	data := &corev1.PersistentVolumeClaim{}
	if err := f.get("data-web-0", data); err != nil || data.UID != dataClaim.UID || !data.DeletionTimestamp.IsZero() {
		t.Errorf("data claim: err %v, uid %s (was %s), deleting %v; want it untouched", err, data.UID, dataClaim.UID, data.DeletionTimestamp)
	}
	if got := testutil.ToFloat64(releasesTotal.WithLabelValues("NodeDeleted")) - releasedBefore; got != 1 {
		t.Errorf("listener_operator_pinned_claims_released_total{trigger=NodeDeleted} grew by %v, want 1", got)
	}

	// The new claim gets pinned to node A: the Listener says its pinned
	// node is available again.
	f.bind(newClaim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, f.ns+"-a")
	testenv.Converges(t, "PinnedNodesAvailable True", func() error {
		cur := &v1alpha1.Listener{}
		if err := f.get(l.Name, cur); err != nil {
			return err
		}
		if c := pinCondition(cur); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonAvailable {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestNeverOnlyExplains: with release: Never nothing is deleted; the claim
// and the pod get an event, the Listener a condition and the metric a
// series that name the node and the command that releases the claim; the
// command does.
func TestNeverOnlyExplains(t *testing.T) {
	f := newFixture(t, &v1alpha1.PinnedNodeLoss{Release: v1alpha1.PinnedNodeReleaseNever})
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.1.2")
	sts := f.statefulSet(b.Name)
	claim := f.waitClaim("listener-web-0")
	pod := &corev1.Pod{}
	testenv.Converges(t, "pod web-0", func() error { return f.get("web-0", pod) })
	f.unpinTemplate(sts)
	f.bind(claim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	l, nodePort := f.waitListener("listener-web-0")

	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	command := fmt.Sprintf("kubectl annotate pvc -n %s listener-web-0 %s=%s", f.ns, v1alpha1.AnnotationReleasePinnedNode, b.Name)
	f.waitEvent("NodeLost event on the claim", claim.UID, v1alpha1.ReasonNodeLost, b.Name+", which no longer exists", command)
	f.waitEvent("NodeLost event on the pod", pod.UID, v1alpha1.ReasonNodeLost, command)
	testenv.Converges(t, "PinnedNodesAvailable False NodeLost", func() error {
		cur := &v1alpha1.Listener{}
		if err := f.get(l.Name, cur); err != nil {
			return err
		}
		if c := pinCondition(cur); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNodeLost || !strings.Contains(c.Message, command) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if got := testutil.ToFloat64(lostGauge.WithLabelValues(f.ns, "listener-web-0", b.Name, RemedyAnnotateClaim)); got != 1 {
		t.Errorf("listener_operator_pinned_node_lost{node=%s,remedy=%s} = %v, want 1", b.Name, RemedyAnnotateClaim, got)
	}
	cur := &corev1.PersistentVolumeClaim{}
	if err := f.get(claim.Name, cur); err != nil || cur.UID != claim.UID || !cur.DeletionTimestamp.IsZero() {
		t.Fatalf("claim under release: Never: err %v, deleting %v; want it kept", err, cur.DeletionTimestamp)
	}

	// The command from the event releases it.
	cur.Annotations[v1alpha1.AnnotationReleasePinnedNode] = b.Name
	if err := f.c.Update(f.ctx, cur); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("Released event on the claim", claim.UID, v1alpha1.ReasonReleased, "as its annotation")
	testenv.Converges(t, "web-0 recreated without the pin", func() error {
		p := &corev1.Pod{}
		if err := f.get("web-0", p); err != nil {
			return err
		}
		if p.UID == pod.UID || len(claims.PinnedNodes(p)) != 0 {
			return fmt.Errorf("pod uid %s (was %s), requires %v", p.UID, pod.UID, claims.PinnedNodes(p))
		}
		return nil
	})
	if _, got := f.waitListener(l.Name); got != nodePort {
		t.Errorf("node port %d after release, want %d (kept)", got, nodePort)
	}
	if got := testutil.ToFloat64(lostGauge.WithLabelValues(f.ns, "listener-web-0", b.Name, RemedyAnnotateClaim)); got != 0 {
		t.Errorf("metric series still %v after the release, want it gone", got)
	}
}

// TestNotReadyReleaseWaitsForThePod: release: NodeNotReady with a short
// timeout. The pod still runs (as far as the API knows) on the NotReady
// node: the claim is released (deleted, held by PVC protection while the
// pod exists), and the pod's event says how to let it go without a force
// delete.
func TestNotReadyReleaseWaitsForThePod(t *testing.T) {
	f := newFixture(t, &v1alpha1.PinnedNodeLoss{Release: v1alpha1.PinnedNodeReleaseNodeNotReady, NotReadyTimeout: &metav1.Duration{Duration: time.Second}})
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.2.2")
	f.statefulSet("")
	claim := f.waitClaim("listener-web-0")
	pod := &corev1.Pod{}
	testenv.Converges(t, "pod web-0", func() error { return f.get("web-0", pod) })
	f.bind(claim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	if err := f.c.SubResource("binding").Create(f.ctx, pod, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: f.ns}, Target: corev1.ObjectReference{Kind: "Node", Name: b.Name},
	}); err != nil {
		t.Fatalf("bind pod: %v", err)
	}
	f.waitListener("listener-web-0")

	// The kubelet stops reporting.
	testenv.Converges(t, "node NotReady", func() error {
		n := &corev1.Node{}
		if err := f.c.Get(f.ctx, types.NamespacedName{Name: b.Name}, n); err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.Now(), Reason: "NodeStatusUnknown"}}
		return f.c.Status().Update(f.ctx, n)
	})
	f.waitEvent("Released event on the claim", claim.UID, v1alpha1.ReasonReleased, "has not been Ready since", "node.kubernetes.io/out-of-service")
	f.waitEvent("NodeLost event on the pod", pod.UID, v1alpha1.ReasonNodeLost, "kubectl taint node "+b.Name+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute", "never force-deletes")
	testenv.Converges(t, "metric names the out-of-service remedy", func() error {
		if got := testutil.ToFloat64(lostGauge.WithLabelValues(f.ns, "listener-web-0", b.Name, RemedyOutOfServiceTaint)); got != 1 {
			return fmt.Errorf("gauge %v", got)
		}
		return nil
	})
	cur := &corev1.PersistentVolumeClaim{}
	if err := f.get(claim.Name, cur); err != nil || cur.DeletionTimestamp.IsZero() {
		t.Errorf("claim: err %v, deletionTimestamp %v; want it deleted and held by PVC protection", err, cur.DeletionTimestamp)
	}
	p := &corev1.Pod{}
	if err := f.get(pod.Name, p); err != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Errorf("pod on the NotReady node: err %v, deleting %v; the operator must not delete it", err, p.DeletionTimestamp)
	}
}

// TestHandedOverListenerWithoutClaimIsDeleted: a handed-over Listener whose
// claim never comes back (and that no pod mounts) is deleted after the
// handover timeout; nothing is left behind.
func TestHandedOverListenerWithoutClaimIsDeleted(t *testing.T) {
	f := newFixture(t, nil)
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "listener-gone-0", Namespace: f.ns,
		Annotations: map[string]string{v1alpha1.AnnotationHandoverToClaim: "listener-gone-0"}},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(f.class), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	mine := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "users-own", Namespace: f.ns},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(f.class), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	for _, o := range []client.Object{l, mine} {
		if err := f.c.Create(f.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Converges(t, "handed-over Listener deleted", func() error {
		err := f.get(l.Name, &v1alpha1.Listener{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
	f.waitEvent("HandoverExpired event", l.UID, v1alpha1.ReasonHandoverExpired, "did not come back within "+testHandoverTimeout.String())
	if err := f.get(mine.Name, &v1alpha1.Listener{}); err != nil {
		t.Errorf("a Listener without the handover annotation: %v; want it left alone", err)
	}
}

// TestPolicyValidation: the API server refuses a timeout without the policy
// it belongs to, with a message that says so.
func TestPolicyValidation(t *testing.T) {
	e := testenv.Require(t, env)
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "nl-bad-"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true),
		PinnedNodeLoss: &v1alpha1.PinnedNodeLoss{Release: v1alpha1.PinnedNodeReleaseNodeDeleted, NotReadyTimeout: &metav1.Duration{Duration: time.Minute}},
	}}
	err := e.Client.Create(t.Context(), class)
	if err == nil {
		_ = e.Client.Delete(context.WithoutCancel(t.Context()), class)
		t.Fatal("class with notReadyTimeout and release NodeDeleted was accepted")
	}
	if !strings.Contains(err.Error(), "notReadyTimeout only applies to release: NodeNotReady") {
		t.Errorf("error %q does not explain", err)
	}
	class.Spec.PinnedNodeLoss = &v1alpha1.PinnedNodeLoss{Release: "Sometimes"}
	if err := e.Client.Create(t.Context(), class); err == nil || !strings.Contains(err.Error(), "NodeDeleted") {
		t.Errorf("unknown release: err %v, want a refusal listing the values", err)
	}
	class.Spec.PinnedNodeLoss = nil
	if err := e.Client.Create(t.Context(), class); err != nil {
		t.Errorf("class without the field: %v", err)
	} else {
		_ = e.Client.Delete(context.WithoutCancel(t.Context()), class)
	}
}

// TestPendingPodWithoutPinIsRecreated: a pod admitted while the webhooks
// were down has no pinning affinity, only its volume's. After the release
// its claim is gone, and a StatefulSet recreates a Pending pod's missing
// claim only when it next syncs the pod: the operator deletes the Pending
// pod, so that pod and claim come back at once.
func TestPendingPodWithoutPinIsRecreated(t *testing.T) {
	f := newFixture(t, nil)
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.3.2")
	f.statefulSet("")
	claim := f.waitClaim("listener-web-0")
	pod := &corev1.Pod{}
	testenv.Converges(t, "pod web-0", func() error { return f.get("web-0", pod) })
	f.bind(claim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	f.waitListener("listener-web-0")

	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("Released event on the claim", claim.UID, v1alpha1.ReasonReleased, "no longer exists")
	f.waitEvent("PodRecreated event on the pod", pod.UID, v1alpha1.ReasonPodRecreated, "listener claim listener-web-0 was released from its lost node "+b.Name)
	testenv.Converges(t, "claim and pod recreated", func() error {
		c, p := &corev1.PersistentVolumeClaim{}, &corev1.Pod{}
		if err := f.get("listener-web-0", c); err != nil {
			return err
		}
		if err := f.get("web-0", p); err != nil {
			return err
		}
		if c.UID == claim.UID || p.UID == pod.UID {
			return fmt.Errorf("claim uid %s (was %s), pod uid %s (was %s)", c.UID, claim.UID, p.UID, pod.UID)
		}
		return nil
	})
}

// TestBarePodIsNotDeleted: a pod without a controller that requires the
// lost node is not deleted (nothing would recreate it); its event says to
// recreate it, and the metric names that remedy.
func TestBarePodIsNotDeleted(t *testing.T) {
	f := newFixture(t, nil)
	b := f.node(f.ns+"-b", corev1.ConditionTrue, "10.9.4.2")
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "listener-bare", Namespace: f.ns,
		Annotations: map[string]string{v1alpha1.AnnotationListenerClass: f.class}}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(v1alpha1.StorageClassName), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
	}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: f.ns}, Spec: corev1.PodSpec{
		Affinity:   requireNode(b.Name),
		Containers: []corev1.Container{{Name: "c", Image: "c:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
		Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}},
	}}
	for _, o := range []client.Object{claim, pod} {
		if err := f.c.Create(f.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	f.bind(claim, v1alpha1.DriverName, v1alpha1.TopologyKeyHostname, b.Name)
	f.waitListener(claim.Name)

	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("NodeLost event on the bare pod", pod.UID, v1alpha1.ReasonNodeLost, "has no controller to recreate it: delete it and create it again")
	testenv.Converges(t, "metric names the delete-pod remedy", func() error {
		if got := testutil.ToFloat64(lostGauge.WithLabelValues(f.ns, claim.Name, b.Name, RemedyDeletePod)); got != 1 {
			return fmt.Errorf("gauge %v", got)
		}
		return nil
	})
	p := &corev1.Pod{}
	if err := f.get(pod.Name, p); err != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Errorf("bare pod: err %v, deleting %v; want it kept", err, p.DeletionTimestamp)
	}
}
