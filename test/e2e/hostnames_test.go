//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Issue 37, hostnames collide: the template {listener}-{namespace} gives
// Listener web in namespace v-<x> and Listener web-v in namespace <x> one
// name. A new class with it is refused unless it says allowAmbiguous; with
// it, only the first Listener publishes the name, the other reports
// HostnameConflict without naming the first, and gets the name once the
// first is deleted.
func TestHostnameConflictTwoNamespaces(t *testing.T) {
	ctx := t.Context()
	const template = "{listener}-{namespace}.e2e.example.test"
	manifest := `apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata: {name: e2e-flat-hostname}
spec: {serviceType: ClusterIP, hostname: {template: "` + template + `"}}
`
	_, errOut, err := k8s.run(ctx, manifest, "apply", "--dry-run=server", "-f", "-")
	if want := `{listener} and {namespace} share the DNS label "{listener}-{namespace}"`; err == nil || !strings.Contains(errOut, want) || !strings.Contains(errOut, "allowAmbiguous: true") {
		t.Errorf("kubectl apply of a class with %s: %v: %s; want refused, saying %q and naming allowAmbiguous", template, err, errOut, want)
	}
	ensureClass(t, ctx, listenerClass("e2e-flat-hostname", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname: &v1alpha1.HostnamePolicy{Template: template, AllowAmbiguous: ptr.To(true)}}))

	nsB := namespace(t, ctx, "e2e-shop")
	nsA := "v-" + nsB
	if err := k8s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}}); err != nil {
		t.Fatalf("create namespace %s: %v", nsA, err)
	}
	t.Cleanup(func() {
		if os.Getenv("E2E_KEEP") == "" {
			_ = k8s.client.Delete(context.WithoutCancel(ctx), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}})
		}
	})
	host := "web-v-" + nsB + ".e2e.example.test"
	newListener := func(ns, name string) *v1alpha1.Listener {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To("e2e-flat-hostname"), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
		if err := k8s.client.Create(ctx, l); err != nil {
			t.Fatalf("create Listener %s/%s: %v", ns, name, err)
		}
		return l
	}

	first := newListener(nsA, "web")
	hostnameState(t, ctx, first, host, metav1.ConditionTrue)
	time.Sleep(time.Second) // web-v is younger, whatever the clock's second
	second := newListener(nsB, "web-v")
	msg := hostnameState(t, ctx, second, host, metav1.ConditionFalse)
	if strings.Contains(msg, nsA) || strings.Contains(msg, `"web"`) || !strings.Contains(msg, "ListenerClass e2e-flat-hostname") || !strings.Contains(msg, "fix:") {
		t.Errorf("web-v's HostnamePublished message %q: want its class and the fix, and neither namespace %s nor Listener web", msg, nsA)
	}
	hostnameState(t, ctx, first, host, metav1.ConditionTrue)

	if err := k8s.client.Delete(ctx, first); err != nil {
		t.Fatalf("delete Listener web: %v", err)
	}
	hostnameState(t, ctx, second, host, metav1.ConditionTrue)
}

// hostnameState waits until Listener l publishes host (status True: its
// first address and its Service's external-dns annotation) or is refused
// it (False, HostnameConflict: neither, and still Ready with its other
// addresses), and returns the condition's message.
func hostnameState(t *testing.T, ctx context.Context, l *v1alpha1.Listener, host string, status metav1.ConditionStatus) string {
	t.Helper()
	var msg string
	eventually(t, ctx, time.Minute, fmt.Sprintf("Listener %s/%s HostnamePublished %s", l.Namespace, l.Name, status), func(ctx context.Context) (bool, string) {
		var got v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), &got); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionHostnamePublished)
		ready := meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil || cond.Status != status || !ready || len(got.Status.IngressAddresses) == 0 || got.Status.ServiceName == "" {
			return false, fmt.Sprintf("conditions %+v, addresses %+v", got.Status.Conditions, got.Status.IngressAddresses)
		}
		if status == metav1.ConditionFalse && cond.Reason != v1alpha1.ReasonHostnameConflict {
			return false, "reason " + cond.Reason
		}
		if publishes := got.Status.IngressAddresses[0].Address == host; publishes != (status == metav1.ConditionTrue) {
			return false, fmt.Sprintf("addresses %+v", got.Status.IngressAddresses)
		}
		var svc corev1.Service
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: got.Namespace, Name: got.Status.ServiceName}, &svc); err != nil {
			return false, err.Error()
		}
		if annotated := svc.Annotations[v1alpha1.AnnotationExternalDNSHostname] == host; annotated != (status == metav1.ConditionTrue) {
			return false, fmt.Sprintf("Service annotations %v", svc.Annotations)
		}
		msg = cond.Message
		return true, ""
	})
	return msg
}
