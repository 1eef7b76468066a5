package pod

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGateReasons: for each thing a gated pod can lack, the pod's
// condition is False with its reason and a message that says what is
// missing and what to do. (ListenerNotReady, AddressesChanged and
// AddressesReady are TestReadinessGate's; CertificateStale, a Certificate
// Ready for names the operator has not updated yet, lasts only until the
// certificate controller's next write: api/podready's table has it.)
func TestGateReasons(t *testing.T) {
	e := testenv.Require(t, reconciletest.Env)
	gateNodes(t, t.Context(), e.Client)
	for _, tc := range []struct {
		name string
		// class is the Listener's class; nil for a pod whose Listener does
		// not exist.
		class *v1alpha1.ListenerClassSpec
		// listener names the pod's Listener ("web" unless set).
		listener string
		// node is the pod's node: "gate-bare" has no address, "good" one.
		node string
		// prepare runs in the namespace before the pod is made.
		prepare func(t *testing.T, c client.Client, ns string)
		reason  string
		message []string
	}{
		{name: "no Listener", listener: "absent", node: "gate-good", reason: v1alpha1.ReasonListenerMissing,
			message: []string{"volume listener: its Listener does not exist yet", "create the Listener its claim names"}},
		// The Listener is Ready with another pod's node; this pod's has no
		// address to tell it. (Alone on that node the Listener would not be
		// Ready: NoNodes, ListenerNotReady.)
		{name: "node without address", class: &v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}, node: "gate-bare",
			prepare: func(t *testing.T, c client.Client, ns string) {
				reconciletest.ServingPod(t, t.Context(), c, ns, "elsewhere", "gate-good", true, "claim")
			},
			reason: v1alpha1.ReasonAddressesPending, message: []string{"cannot tell the pod its addresses of Listener web yet (", "waiting for node gate-bare to report an IP address or hostname in its status)"}},
		{name: "PodListeners refused", class: &v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}, node: "gate-good",
			prepare: noPodListeners, reason: v1alpha1.ReasonAddressesNotRecorded,
			message: []string{"does not hold its addresses of Listener web yet", "exceeded quota: no-podlisteners", "the API server refused"}},
		{name: "hostname too long", class: &v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}-{namespace}.example.test"}}, listener: strings.Repeat("w", 60), node: "gate-good",
			reason: v1alpha1.ReasonHostnameNotPublished, message: []string{"is not published (reason ", "not that DNS answers"}},
		{name: "certificate not issued", class: &v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "listeners-ca"}}}, node: "gate-good",
			reason: v1alpha1.ReasonCertificateNotReady, message: []string{"the Certificate of Listener web is missing or not Ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ctx, ns := reconciletest.Setup(t)
			c := e.Client
			listener := tc.listener
			if listener == "" {
				listener = "web"
			}
			if tc.prepare != nil {
				tc.prepare(t, c, ns)
			}
			claim := reconciletest.ListenerClaim(ns, "claim", map[string]string{v1alpha1.AnnotationListenerName: listener})
			objs := []client.Object{claim, reconciletest.GatedPod(ns, "pod", claim.Name, tc.node)}
			if tc.class != nil {
				spec := *tc.class
				spec.PodReadiness = ptr.To(v1alpha1.PodReadinessGate)
				class := reconciletest.NewClass(t, ctx, c, spec)
				objs = append(objs, reconciletest.Listener(ns, listener, class.Name, reconciletest.Port("http", 8080)))
			}
			testenv.Create(t, ctx, c, objs...)
			got := gateCondition(waitGate(t, c, objs[1].(*corev1.Pod), corev1.ConditionFalse, tc.reason))
			for _, want := range tc.message {
				if !strings.Contains(got.Message, want) {
					t.Errorf("message %q lacks %q", got.Message, want)
				}
			}
		})
	}
}

// noPodListeners puts a quota of no PodListeners on ns, with the usage the
// quota controller (not running here) would report.
func noPodListeners(t *testing.T, c client.Client, ns string) {
	t.Helper()
	res := corev1.ResourceName("count/podlisteners.listeners.stackable.tech")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-podlisteners", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{res: resource.MustParse("0")}}}
	testenv.Create(t, t.Context(), c, q)
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{res: resource.MustParse("0")}}
	if err := c.Status().Update(t.Context(), q); err != nil {
		t.Fatal(err)
	}
}

// gateNodes makes the nodes the cases' pods run on.
func gateNodes(t *testing.T, ctx context.Context, c client.Client) {
	reconciletest.Node(t, ctx, c, "gate-bare")
	reconciletest.Node(t, ctx, c, "gate-good", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.5"})
}
