//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The readiness gate of classes with spec.podReadiness: Gate (issue 50,
// docs/reconcile.md "Pods Ready only when reachable") on the real nodes:
// the kubelet, the StatefulSet controller and the operator's pod
// controller together, not the pod controller alone as in envtest.

// gateRecheck is longer than the pod controller's recheck of a Listener
// Certificate that is not Ready (15 s, reconcile/pod/gate.go): a pod held
// that long was judged again and still held.
const gateRecheck = 20 * time.Second

// Issue 50: a 3-replica OrderedReady StatefulSet on a gated class whose
// Listeners get a cert-manager Certificate. With cert-manager's controller
// scaled to 0 the first replica's volume is published (the pod runs and
// reads its address) but its Certificate is never issued: the replica is
// Running and not Ready, its condition says CertificateNotReady, and the
// StatefulSet makes no second replica. cert-manager back: the replicas
// become Ready in order, each answering at the address its volume gives.
//
// Why a Certificate and not a hostname conflict (HostnamePublished False):
// once the other Listener gives the name up, the name joins the replica's
// addresses, so the replica that started without it is AddressesChanged,
// not Ready, until it restarts; the Certificate changes no address.
func TestReadinessGateHoldsOrderedReady(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	ensureListenerCA(t, ctx, certManagerClient(t))
	const class = "e2e-gate-certificate"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PreferredAddressType: v1alpha1.PreferredAddressIP,
		PodReadiness: ptr.To(v1alpha1.PodReadinessGate),
		Certificate:  &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindClusterIssuer, Name: listenerCA}},
	}))
	restore := certManagerDown(t, ctx)

	ns := namespace(t, ctx, "e2e-gate")
	sts := demoStatefulSet(ns, "web", class, 3)
	sts.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	held := func(ctx context.Context) (bool, string) {
		pods, err := stsPods(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		if len(pods) != 1 || pods[0].Name != "web-0" {
			return false, fmt.Sprintf("pods %s, want web-0 alone", podNames(pods))
		}
		return heldBy(&pods[0], v1alpha1.ReasonCertificateNotReady)
	}
	eventually(t, ctx, podTimeout, "web-0 Running, not Ready, CertificateNotReady", held)
	consistently(t, ctx, gateRecheck, "web-0 alone, Running, not Ready, CertificateNotReady", held)
	web0 := gatedPod(t, ctx, ns, "web-0")
	if msg := gateCondition(web0).Message; namesOtherNamespace(t, ctx, msg, ns) != "" || !strings.Contains(msg, "listener-web-0") {
		t.Errorf("web-0's condition message %q: want its own Listener listener-web-0 named and no other namespace (found %q)", msg, namesOtherNamespace(t, ctx, msg, ns))
	}

	restore()
	readyAt := readyInOrder(t, ctx, ns, "web", 3, 4*time.Minute)
	for i := range 3 {
		pod := fmt.Sprintf("web-%d", i)
		p := gatedPod(t, ctx, ns, pod)
		if c := gateCondition(p); c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonAddressesReady {
			t.Errorf("%s: condition %s is %s %s, want True %s", pod, v1alpha1.PodConditionAddressesReady, c.Status, c.Reason, v1alpha1.ReasonAddressesReady)
		}
		addr, port := defaultAddress(t, tree(t, ctx, ns, pod))
		answers(t, ctx, addr, port, pod)
		t.Logf("%s Ready %s after web-0 was seen Ready, answers at %s:%s", pod, readyAt[i].Sub(readyAt[0]).Round(100*time.Millisecond), addr, port)
	}
}

// certManagerDown scales cert-manager to 0 (both Deployments, as
// TestCertManagerDownWebhooksKeepServing does) and returns what brings it
// back to the replicas it had; the test's cleanup brings it back too.
func certManagerDown(t *testing.T, ctx context.Context) func() {
	t.Helper()
	var dep appsv1.Deployment
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: certManagerNS, Name: "cert-manager"}, &dep); err != nil {
		t.Fatalf("read cert-manager's Deployment: %v", err)
	}
	replicas := int(ptr.Deref(dep.Spec.Replicas, 1))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			scaleCertManager(t, context.WithoutCancel(ctx), replicas)
		}
	}
	t.Cleanup(restore)
	scaleCertManager(t, ctx, 0)
	return restore
}

// stsPods lists a StatefulSet's pods (demoStatefulSet's app label) that
// are not being deleted, by name.
func stsPods(ctx context.Context, ns, sts string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := k8s.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": sts}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func podNames(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"="+podState(&p))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// heldBy says whether the gate holds a running pod back for reason: its
// containers run, it is not Ready, and its condition is False with reason.
func heldBy(p *corev1.Pod, reason string) (bool, string) {
	c := gateCondition(p)
	state := fmt.Sprintf("%s: %s, Ready %v, condition %s %s %q", p.Name, podState(p), isReady(p), c.Status, c.Reason, c.Message)
	return p.Status.Phase == corev1.PodRunning && allContainersReady(p) && !isReady(p) &&
		c.Status == corev1.ConditionFalse && c.Reason == reason, state
}

// allContainersReady: only the gate can keep such a pod from Ready.
func allContainersReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gateCondition is the pod's listeners.stackable.tech/addresses-ready
// condition (the zero condition when it has none).
func gateCondition(p *corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == v1alpha1.PodConditionAddressesReady {
			return c
		}
	}
	return corev1.PodCondition{}
}

// gatedPod reads a pod and fails unless the webhook gave it the gate.
func gatedPod(t *testing.T, ctx context.Context, ns, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == v1alpha1.PodConditionAddressesReady {
			return &p
		}
	}
	t.Fatalf("pod %s/%s has readiness gates %v, want %s", ns, name, p.Spec.ReadinessGates, v1alpha1.PodConditionAddressesReady)
	return nil
}

// namesOtherNamespace returns the first namespace of the cluster other
// than own that msg names (as a whole word, or as the namespace of a
// namespace/name), "" when none. "cert-manager" counts only as
// cert-manager/…: as a word it is the product a message may point to.
func namesOtherNamespace(t *testing.T, ctx context.Context, msg, own string) string {
	t.Helper()
	var list corev1.NamespaceList
	if err := k8s.client.List(ctx, &list); err != nil {
		t.Fatalf("list namespaces: %v", err)
	}
	for _, n := range list.Items {
		if n.Name == own {
			continue
		}
		word := regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(n.Name) + `($|[^a-z0-9-])`)
		if strings.Contains(msg, n.Name+"/") || n.Name != certManagerNS && word.MatchString(msg) {
			return n.Name
		}
	}
	return ""
}

// consistently polls cond every half second for d and fails the test the
// first time it is false: a state that must hold, not be reached.
func consistently(t *testing.T, ctx context.Context, d time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ok, msg := cond(ctx); !ok {
			t.Fatalf("%s: no longer true after %s: %s", what, d-time.Until(end).Round(time.Second), msg)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readyInOrder waits until pods <sts>-0..n-1 are Ready and returns when
// each was first seen Ready (polled every half second). It fails when a
// pod is seen Ready before the one of the ordinal below it, or when a pod
// was created before the one below it was Ready (by the pods' own
// timestamps, to the second): OrderedReady, held by the gate.
func readyInOrder(t *testing.T, ctx context.Context, ns, sts string, n int, timeout time.Duration) []time.Time {
	t.Helper()
	seen := make([]time.Time, n)
	eventually(t, ctx, timeout, fmt.Sprintf("%d pods of %s/%s Ready in order", n, ns, sts), func(ctx context.Context) (bool, string) {
		pods, err := stsPods(ctx, ns, sts)
		if err != nil {
			return false, err.Error()
		}
		now := time.Now()
		for i := range pods {
			var ord int
			if _, err := fmt.Sscanf(strings.TrimPrefix(pods[i].Name, sts+"-"), "%d", &ord); err != nil || ord >= n {
				continue
			}
			if isReady(&pods[i]) && seen[ord].IsZero() {
				seen[ord] = now
			}
		}
		done := 0
		for _, s := range seen {
			if !s.IsZero() {
				done++
			}
		}
		return done == n, podNames(pods)
	})
	for i := 1; i < n; i++ {
		if seen[i].Before(seen[i-1]) {
			t.Errorf("%s-%d was seen Ready at %s, before %s-%d (%s)", sts, i, seen[i].Format(time.StampMilli), sts, i-1, seen[i-1].Format(time.StampMilli))
		}
		prev, cur := gatedPod(t, ctx, ns, fmt.Sprintf("%s-%d", sts, i-1)), gatedPod(t, ctx, ns, fmt.Sprintf("%s-%d", sts, i))
		if readySince := readyTransition(prev); cur.CreationTimestamp.Before(&readySince) {
			t.Errorf("%s was created at %s, before %s was Ready (%s)", cur.Name, cur.CreationTimestamp, prev.Name, readySince)
		}
	}
	return seen
}

// readyTransition is when the pod last turned Ready.
func readyTransition(p *corev1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}
