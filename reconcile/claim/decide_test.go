package claim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestDecide: what the claim controller does about a claim's own Listener,
// for each Listener it may find under that name.
func TestDecide(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "uid-claim", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	use := claims.Use{Listener: "web-0", Class: "lb", Own: true}
	http := []v1alpha1.ListenerPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}
	admin := []v1alpha1.ListenerPort{{Name: "admin", Port: 81, Protocol: corev1.ProtocolTCP}}
	own := func(class string, ports []v1alpha1.ListenerPort) *v1alpha1.Listener {
		return claimListenerObject(pvc, claims.Use{Listener: use.Listener, Class: class, Own: true}, ports, "")
	}
	handed := own("lb", http)
	handed.OwnerReferences = nil
	handed.Annotations = map[string]string{v1alpha1.AnnotationHandoverToClaim: pvc.Name}
	stackable := own("lb", http)
	stackable.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv-1", UID: "uid-pv"}}
	earlier := own("lb", http)
	earlier.OwnerReferences[0].UID = "uid-earlier-claim"
	users := own("lb", http)
	users.OwnerReferences = nil
	for _, tc := range []struct {
		name      string
		bound     string
		ports     []v1alpha1.ListenerPort
		existing  *v1alpha1.Listener
		want      action
		wantClass string
		wantPorts []v1alpha1.ListenerPort
		portless  bool
	}{
		{name: "none yet", ports: http, want: actionCreate, wantPorts: http},
		{name: "as the claim wants", ports: http, existing: own("lb", http), want: actionNone},
		{name: "pods declare other ports", ports: admin, existing: own("lb", http), want: actionUpdate, wantClass: "lb", wantPorts: admin},
		{name: "no running pod declares ports: kept", existing: own("lb", http), want: actionNone},
		{name: "never had ports", existing: own("lb", nil), want: actionNone, portless: true},
		{name: "class annotation changed, not bound", ports: http, existing: own("np", http), want: actionUpdate, wantClass: "lb", wantPorts: http},
		{name: "class annotation changed, bound: class kept", bound: "web-0", ports: http, existing: own("np", http), want: actionNone},
		{name: "handed over", ports: http, existing: handed, want: actionAdopt, wantClass: "lb", wantPorts: http},
		{name: "made by the Stackable operator", ports: http, existing: stackable, want: actionAdopt, wantClass: "lb", wantPorts: http},
		{name: "an earlier claim's", ports: http, existing: earlier, want: actionAwaitCollection},
		{name: "a user's", ports: http, existing: users, want: actionRefuseForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decide(pvc, use, tc.bound, tc.ports, tc.existing)
			if o.action != tc.want || o.portless != tc.portless {
				t.Fatalf("action %d, portless %v; want %d, %v", o.action, o.portless, tc.want, tc.portless)
			}
			switch o.action {
			case actionCreate:
				if len(o.ports) != len(tc.wantPorts) || o.ports[0] != tc.wantPorts[0] {
					t.Errorf("creates with ports %v, want %v", o.ports, tc.wantPorts)
				}
			case actionUpdate, actionAdopt:
				l := o.listener
				if *l.Spec.ClassName != tc.wantClass || len(l.Spec.Ports) != 1 || l.Spec.Ports[0] != tc.wantPorts[0] {
					t.Errorf("writes class %s, ports %v; want %s, %v", *l.Spec.ClassName, l.Spec.Ports, tc.wantClass, tc.wantPorts)
				}
				if !metav1.IsControlledBy(l, pvc) || len(l.OwnerReferences) != 1 || !ptr.Deref(l.OwnerReferences[0].BlockOwnerDeletion, false) {
					t.Errorf("owner references %+v, want the claim's alone", l.OwnerReferences)
				}
				if _, ok := l.Annotations[v1alpha1.AnnotationHandoverToClaim]; ok {
					t.Error("the handover annotation stays")
				}
				if l == tc.existing {
					t.Error("the cached Listener was changed in place")
				}
			case actionAwaitCollection, actionRefuseForeign:
				if o.listener != tc.existing {
					t.Errorf("names %v, want the Listener found", o.listener)
				}
			}
		})
	}
	if _, ok := handed.Annotations[v1alpha1.AnnotationHandoverToClaim]; !ok || stackable.OwnerReferences[0].Kind != "PersistentVolume" {
		t.Error("decide changed the Listener it was given")
	}
}
