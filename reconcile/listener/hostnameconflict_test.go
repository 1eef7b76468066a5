package listener

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestHostnameConflict: a flattened template ({listener}-{namespace})
// gives Listener web in namespace v-<x> and Listener web-v in namespace <x>
// one name. Only one of them publishes it: the one whose Service carries
// it already, else the older. The other stays Ready with its other
// addresses, gets no external-dns annotation and HostnamePublished False
// (HostnameConflict) with a message that names its class and the fix but
// not the other Listener; it gets the name once the first no longer
// publishes it.
func TestHostnameConflict(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	nsB := e.Namespace(t, ctx, "h-")
	nsA := "v-" + nsB
	testenv.Create(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}})
	host := "web-v-" + nsB + ".example.test"
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.example.test"}})
	plain := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	web, webV := types.NamespacedName{Namespace: nsA, Name: "web"}, types.NamespacedName{Namespace: nsB, Name: "web-v"}

	// web is the older: created first, a second before web-v
	// (creationTimestamp counts seconds).
	testenv.Create(t, ctx, c, reconciletest.Listener(nsA, "web", class.Name, reconciletest.Port("http", 80)))
	published(t, c, web, "web."+nsA+".example.test")
	time.Sleep(1100 * time.Millisecond)
	testenv.Create(t, ctx, c, reconciletest.Listener(nsB, "web-v", class.Name, reconciletest.Port("http", 80)))
	published(t, c, webV, "web-v."+nsB+".example.test")

	// Neither carries the new name: the older gets it.
	class.Spec.Hostname = &v1alpha1.HostnamePolicy{Template: "{listener}-{namespace}.example.test", AllowAmbiguous: ptr.To(true)}
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	published(t, c, web, host)
	conflicted(t, c, webV, class.Name, host, web)

	// web moves to a class without a hostname: web-v gets the name.
	moveTo(t, c, web, plain.Name)
	published(t, c, webV, host)
	// web comes back, older, but web-v's Service carries the name now.
	moveTo(t, c, web, class.Name)
	conflicted(t, c, web, class.Name, host, webV)
	published(t, c, webV, host)

	// web-v goes (its Service with it): web gets the name.
	if err := c.Delete(ctx, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: webV.Namespace, Name: webV.Name}}); err != nil {
		t.Fatal(err)
	}
	published(t, c, web, host)
}

// published waits until Listener key publishes host: HostnamePublished
// True, host first among its addresses and on its Service.
func published(t *testing.T, c client.Client, key types.NamespacedName, host string) {
	t.Helper()
	l := reconciletest.WaitStatus(t, t.Context(), c, key.Namespace, key.Name, func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
		if cond == nil || cond.Status != metav1.ConditionTrue || len(l.Status.IngressAddresses) == 0 || l.Status.IngressAddresses[0].Address != host {
			return fmt.Errorf("condition %+v, addresses %+v; want HostnamePublished True and %s first", cond, l.Status.IngressAddresses, host)
		}
		return nil
	})
	reconciletest.GetService(t, t.Context(), c, key.Namespace, l.Status.ServiceName, func(s *corev1.Service) error {
		if got := s.Annotations[v1alpha1.AnnotationExternalDNSHostname]; got != host {
			return fmt.Errorf("%s: annotation %q, want %q", key, got, host)
		}
		return nil
	})
}

// conflicted waits until Listener key, of class, is refused host because
// other publishes it, and checks what its owner sees.
func conflicted(t *testing.T, c client.Client, key types.NamespacedName, class, host string, other types.NamespacedName) {
	t.Helper()
	l := reconciletest.WaitStatus(t, t.Context(), c, key.Namespace, key.Name, func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonHostnameConflict {
			return fmt.Errorf("condition %+v, want HostnamePublished False %s", cond, v1alpha1.ReasonHostnameConflict)
		}
		return nil
	})
	if _, ready := reconciletest.ReadyReason(l); !ready || len(l.Status.IngressAddresses) == 0 {
		t.Errorf("%s: conditions %+v, addresses %+v; want Ready with its other addresses", key, l.Status.Conditions, l.Status.IngressAddresses)
	}
	for _, a := range l.Status.IngressAddresses {
		if a.Address == host {
			t.Errorf("%s publishes %s, which %s publishes", key, host, other)
		}
	}
	cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
	for _, want := range []string{"ListenerClass " + class, "another Listener", "fix:", "allowAmbiguous"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("%s: message %q does not say %q", key, cond.Message, want)
		}
	}
	for _, secret := range []string{other.Namespace, other.Name + " ", `"` + other.Name + `"`} {
		if strings.Contains(cond.Message, secret) {
			t.Errorf("%s: message %q names the other Listener (%q)", key, cond.Message, secret)
		}
	}
	reconciletest.GetService(t, t.Context(), c, key.Namespace, l.Status.ServiceName, func(s *corev1.Service) error {
		if got, ok := s.Annotations[v1alpha1.AnnotationExternalDNSHostname]; ok {
			return fmt.Errorf("%s: annotation %s=%q, want none", key, v1alpha1.AnnotationExternalDNSHostname, got)
		}
		return nil
	})
	if ev := reconciletest.WaitEvent(t, t.Context(), c, key.Namespace, key.Name, EventHostnameConflict); ev.Type != corev1.EventTypeWarning {
		t.Errorf("%s: event %s %q, want a Warning", key, ev.Type, ev.Note)
	}
}

// moveTo points Listener key at another class.
func moveTo(t *testing.T, c client.Client, key types.NamespacedName, class string) {
	t.Helper()
	l := &v1alpha1.Listener{}
	if err := c.Get(t.Context(), key, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.ClassName = ptr.To(class)
	if err := c.Update(t.Context(), l); err != nil {
		t.Fatal(err)
	}
}
