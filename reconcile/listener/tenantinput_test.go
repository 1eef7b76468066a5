package listener

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestOverridesTheClassRefusesAreLeftOut: Listeners admitted while the
// webhooks were down, whose objectOverrides the one override rule
// (service.Service) refuses, get a Service made from the class without the
// refused parts, Ready=False with reason Invalid naming each dropped field
// and the class, and an OverridesDropped event (issue 20, cases 1 and 2).
// What the class leaves open follows the Stackable precedence (case 6).
func TestOverridesTheClassRefusesAreLeftOut(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType:        v1alpha1.ServiceTypeClusterIP,
		ServiceAnnotations: map[string]string{"deprecated": "was here", "winner": "deprecated"},
		ServiceOverrides:   &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"serviceOverrides":"was here","winner":"serviceOverrides"}},"spec":{"sessionAffinity":"ClientIP"}}`)},
	})
	for _, tc := range []struct {
		name      string
		overrides []string
		dropped   []string // fields named in the condition; none: Ready
		check     func(svc *corev1.Service) error
	}{
		{"case-folded", []string{
			`{"apiVersion":"v1","kind":"Service","Metadata":5,"metadata":{"name":"case-folded"},"spec":{"type":"NodePort"}}`,
			`{"apiVersion":"v1","kind":"Service","Metadata":null,"metadata":{"name":"case-folded"}}`,
		}, []string{"spec.objectOverrides[0].Metadata", "spec.objectOverrides[1].Metadata"}, func(svc *corev1.Service) error {
			if svc.Spec.Type != corev1.ServiceTypeClusterIP {
				return fmt.Errorf("type %s, want the class's ClusterIP", svc.Spec.Type)
			}
			return nil
		}},
		{"external-ips", []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"external-ips","annotations":{"metallb.io/loadBalancerIPs":"203.0.113.10","mine":"yes"}},"spec":{"externalIPs":["203.0.113.10"]}}`},
			[]string{"spec.objectOverrides[0].metadata.annotations[metallb.io/loadBalancerIPs]", "spec.objectOverrides[0].spec.externalIPs"}, func(svc *corev1.Service) error {
				if len(svc.Spec.ExternalIPs) > 0 || svc.Annotations["metallb.io/loadBalancerIPs"] != "" || svc.Annotations["mine"] != "yes" {
					return fmt.Errorf("externalIPs %v annotations %v: want no exposure, the open annotation kept", svc.Spec.ExternalIPs, svc.Annotations)
				}
				return nil
			}},
		{"off-allow-list", []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"off-allow-list","annotations":{"oci.oraclecloud.com/load-balancer-type":"nlb","team":"a"}},"spec":{"ports":[{"name":"http","port":80},{"name":"more","port":81}]}}`},
			[]string{"spec.objectOverrides[0].metadata.annotations[oci.oraclecloud.com/load-balancer-type]", "spec.objectOverrides[0].spec.ports"}, func(svc *corev1.Service) error {
				if svc.Annotations["oci.oraclecloud.com/load-balancer-type"] != "" || svc.Annotations["team"] != "a" || len(svc.Spec.Ports) != 1 {
					return fmt.Errorf("annotations %v ports %v: want the key off the allow-list left out, team kept, only the declared port", svc.Annotations, svc.Spec.Ports)
				}
				return nil
			}},
		{"stackable-overrides", []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"stackable-overrides","namespace":"` + ns + `","annotations":{"listener":"was here","winner":"listener"}},"spec":{"internalTrafficPolicy":"Local"}}`},
			nil, func(svc *corev1.Service) error {
				want := map[string]string{"deprecated": "was here", "serviceOverrides": "was here", "listener": "was here", "winner": "listener"}
				for k, v := range want {
					if svc.Annotations[k] != v {
						return fmt.Errorf("annotations %v, want %v", svc.Annotations, want)
					}
				}
				if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal {
					return fmt.Errorf("sessionAffinity %s internalTrafficPolicy %v, want ClientIP and Local", svc.Spec.SessionAffinity, svc.Spec.InternalTrafficPolicy)
				}
				return nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := reconciletest.Listener(ns, tc.name, class.Name, reconciletest.Port("http", 80))
			for _, o := range tc.overrides {
				l.Spec.ObjectOverrides = append(l.Spec.ObjectOverrides, runtime.RawExtension{Raw: []byte(o)})
			}
			testenv.Create(t, ctx, c, l)
			reconciletest.GetService(t, ctx, c, ns, tc.name, tc.check)
			if len(tc.dropped) == 0 {
				reconciletest.WaitReason(t, ctx, c, ns, tc.name, v1alpha1.ReasonReady)
				return
			}
			got := reconciletest.WaitReason(t, ctx, c, ns, tc.name, v1alpha1.ReasonInvalid)
			msg := got.Status.Conditions[0].Message
			for _, want := range append(tc.dropped, `ListenerClass "`+class.Name+`"`, "remove") {
				if !strings.Contains(msg, want) {
					t.Errorf("condition message %q does not contain %q", msg, want)
				}
			}
			if len(got.Status.IngressAddresses) == 0 {
				t.Errorf("the Service made without the refused fields serves, but no address is published")
			}
			ev := reconciletest.WaitEvent(t, ctx, c, ns, tc.name, EventOverridesDropped)
			for _, f := range tc.dropped {
				if !strings.Contains(ev.Note, f) {
					t.Errorf("event %q does not name %s", ev.Note, f)
				}
			}
		})
	}
}

// TestTightenedClassTakesBackWhatItLocks: an admin locks a field a
// Listener's override sets; the Service loses it (issue 20, "invalid").
func TestTightenedClassTakesBackWhatItLocks(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	l := reconciletest.Listener(ns, "sticky", class.Name, reconciletest.Port("http", 80))
	l.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"sticky"},"spec":{"sessionAffinity":"ClientIP"}}`)}}
	testenv.Create(t, ctx, c, l)
	reconciletest.WaitReason(t, ctx, c, ns, "sticky", v1alpha1.ReasonReady)
	reconciletest.GetService(t, ctx, c, ns, "sticky", func(svc *corev1.Service) error {
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
			return fmt.Errorf("sessionAffinity %s, want the Listener's ClientIP", svc.Spec.SessionAffinity)
		}
		return nil
	})
	class.Spec.LockedServiceFields = []string{"spec.sessionAffinity"}
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	got := reconciletest.WaitReason(t, ctx, c, ns, "sticky", v1alpha1.ReasonInvalid)
	if msg := got.Status.Conditions[0].Message; !strings.Contains(msg, "spec.objectOverrides[0].spec.sessionAffinity") || !strings.Contains(msg, "spec.lockedServiceFields") {
		t.Errorf("condition %q does not name the dropped field and why", msg)
	}
	reconciletest.GetService(t, ctx, c, ns, "sticky", func(svc *corev1.Service) error {
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
			return fmt.Errorf("sessionAffinity %s, want the class's None", svc.Spec.SessionAffinity)
		}
		return nil
	})
}

// TestListenerWithoutClass: removing spec.className (issue 20, case 3) is
// a request for no Service: it is deleted and the addresses leave the
// status. A class that vanishes (only while the webhooks are down) keeps
// the Service and the addresses, and status.className records the class the
// Service was made from (the ListenerClass in-use guard counts it).
func TestListenerWithoutClass(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80)), reconciletest.Listener(ns, "kept", class.Name, reconciletest.Port("http", 80)))
	for _, name := range []string{"web", "kept"} {
		reconciletest.WaitStatus(t, ctx, c, ns, name, func(l *v1alpha1.Listener) error {
			if l.Status.ClassName != class.Name || l.Status.ServiceName != name {
				return fmt.Errorf("status %+v, want className %s and a Service", l.Status, class.Name)
			}
			return nil
		})
	}

	patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/className"}]`))
	if err := c.Patch(ctx, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, patch); err != nil {
		t.Fatal(err)
	}
	l := reconciletest.WaitReason(t, ctx, c, ns, "web", v1alpha1.ReasonNoClass)
	if !reflect.DeepEqual(l.Status, v1alpha1.ListenerStatus{Conditions: l.Status.Conditions}) {
		t.Errorf("status of a Listener without class %+v: want no address, Service or class", l.Status)
	}
	testenv.Converges(t, "Service of the Listener without class deleted", func() error {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.ServiceName("web")}, &corev1.Service{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("Service still there: %v", err)
		}
		return nil
	})

	// The other Listener's class is renamed behind the webhooks' back.
	kept := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "kept"}, kept); err != nil {
		t.Fatal(err)
	}
	kept.Spec.ClassName = new(string)
	*kept.Spec.ClassName = "does-not-exist"
	if err := c.Update(ctx, kept); err != nil {
		t.Fatal(err)
	}
	got := reconciletest.WaitReason(t, ctx, c, ns, "kept", v1alpha1.ReasonClassNotFound)
	if got.Status.ClassName != class.Name || got.Status.ServiceName != "kept" {
		t.Errorf("status %+v: want the Service and the class it was made from kept", got.Status)
	}
	reconciletest.GetService(t, ctx, c, ns, "kept", nil)
}
