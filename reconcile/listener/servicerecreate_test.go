package listener

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// holdServices keeps the garbage collector from deleting the Services of
// namespace ns that carry holdLabel, for the rest of t (holdRoutes).
func holdServices(t *testing.T, c client.Client, ns string) {
	t.Helper()
	probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{holdLabel: "true"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}}}
	holdDeletes(t, c, ns, "", []string{"services"}, probe)
}

// TestServiceRecreatedListener: a NodePort Listener deleted and made again
// under its name takes over the Service its predecessor left (the suite's
// garbage collector is held off by holdServices) with the same node port
// and cluster IP, instead of reading ForeignService until the collector
// deletes it and a Service with new node ports is made. A Service of a
// Listener of another name, or one without the operator's labels, is
// still foreign.
func TestServiceRecreatedListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	holdServices(t, c, ns)
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	t.Run("taken over", func(t *testing.T) {
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "np", class.Name, reconciletest.Port("http", 80)))
		first := reconciletest.WaitStatus(t, ctx, c, ns, "np", func(l *v1alpha1.Listener) error {
			if len(l.Status.NodePorts) != 1 {
				return fmt.Errorf("node ports %v", l.Status.NodePorts)
			}
			return nil
		})
		reason, _ := reconciletest.ReadyReason(first)
		key := types.NamespacedName{Namespace: ns, Name: "np"}
		old := &corev1.Service{}
		hold(t, c, key, old)

		l := recreate(t, c, ns, "np", reconciletest.Listener(ns, "np", class.Name, reconciletest.Port("http", 80)))
		svc := &corev1.Service{}
		controlledBy(t, c, key, svc, l)
		if svc.UID != old.UID || svc.Spec.ClusterIP != old.Spec.ClusterIP || !reflect.DeepEqual(nodePortsOf(svc), nodePortsOf(old)) {
			t.Errorf("Service uid %s, cluster IP %s, node ports %v; want the predecessor's: %s, %s, %v",
				svc.UID, svc.Spec.ClusterIP, nodePortsOf(svc), old.UID, old.Spec.ClusterIP, nodePortsOf(old))
		}
		if refs := svc.OwnerReferences; len(refs) != 1 {
			t.Errorf("owner references %+v, want only the recreated Listener", refs)
		}
		reconciletest.WaitReason(t, ctx, c, ns, "np", reason)
		reconciletest.WaitStatus(t, ctx, c, ns, "np", func(l *v1alpha1.Listener) error {
			if !reflect.DeepEqual(l.Status.NodePorts, first.Status.NodePorts) {
				return fmt.Errorf("node ports %v, want the predecessor's %v", l.Status.NodePorts, first.Status.NodePorts)
			}
			return nil
		})
	})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		owner  string // the name of the Listener that controls the Service
	}{
		{"other-name", map[string]string{LabelName: LabelNameValue, LabelManagedBy: v1alpha1.FieldManager}, "someone-else"},
		{"no-label", map[string]string{}, "no-label"},
		{"other-manager", map[string]string{LabelName: LabelNameValue, LabelManagedBy: "listeners.stackable.tech_listener"}, "other-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.labels[holdLabel] = "true" // its controller does not exist: the collector would delete it
			foreign := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns, Labels: tc.labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener",
						Name: tc.owner, UID: types.UID("00000000-0000-0000-0000-" + fmt.Sprintf("%012d", len(tc.name))), Controller: ptr.To(true)}}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}, Selector: map[string]string{"app": "theirs"}},
			}
			testenv.Create(t, ctx, c, foreign)
			testenv.Create(t, ctx, c, reconciletest.Listener(ns, tc.name, class.Name, reconciletest.Port("http", 80)))
			reconciletest.WaitReason(t, ctx, c, ns, tc.name, v1alpha1.ReasonForeignService)
			svc := reconciletest.GetService(t, ctx, c, ns, tc.name, nil)
			if svc.ResourceVersion != foreign.ResourceVersion {
				t.Errorf("the foreign Service was written: %+v", svc.ObjectMeta)
			}
		})
	}
}
