package listener

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestSharingShortFollowsClassOtherwise (issue 49, seed
// 2675258685051132550): a sharing class narrowed so that a replica's block
// no longer fits leaves that replica's Service on its ports and key, and
// it says SharedPortsExhausted; but the Service still follows the class
// in all else, so a hostname or pool the class dropped does not stay
// exposed. A Service of a class moved to sharing with no room stays of
// its type and takes the class's metadata too.
func TestSharingShortFollowsClassOtherwise(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	const dns = v1alpha1.AnnotationExternalDNSHostname
	t.Run("narrowed", func(t *testing.T) {
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
			LoadBalancerClass: ptr.To("listeners.test/none"), LoadBalancerAllocateNodePorts: ptr.To(false),
			ServiceAnnotations:  map[string]string{"example.test/pool": "public"},
			Hostname:            &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.example.test"},
			LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9005}})
		for i := range 3 {
			brokerPod(t, c, ns, "kafka", class.Name, i)
		}
		key := ns + "/kafka"
		sharedService(t, c, ns, "listener-kafka-2", key, map[string]int32{"internal": 9004, "kafka": 9005})
		serviceAnnotated(t, c, ns, "listener-kafka-2", map[string]string{"example.test/pool": "public", dns: "listener-kafka-2." + ns + ".example.test"})

		updateClass(t, c, class.Name, func(s *v1alpha1.ListenerClassSpec) {
			s.LoadBalancerSharing = &v1alpha1.LoadBalancerSharing{From: 9000, To: 9003}
			s.ServiceAnnotations = map[string]string{"example.test/pool": "private"}
			s.Hostname = nil
		})
		l := reconciletest.WaitReason(t, ctx, c, ns, "listener-kafka-2", v1alpha1.ReasonSharedPortsExhausted)
		if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "replica 2 needs ports 9004-9005") ||
			!strings.Contains(msg, "until then Service "+names.ServiceName("listener-kafka-2")+" keeps its ports") {
			t.Errorf("Ready message %q", msg)
		}
		serviceAnnotated(t, c, ns, "listener-kafka-2", map[string]string{"example.test/pool": "private", dns: ""})
		sharedService(t, c, ns, "listener-kafka-2", key, map[string]int32{"internal": 9004, "kafka": 9005})
		serviceAnnotated(t, c, ns, "listener-kafka-0", map[string]string{"example.test/pool": "private", dns: ""})
		sharedService(t, c, ns, "listener-kafka-1", key, map[string]int32{"internal": 9002, "kafka": 9003})
	})
	t.Run("moved from ClusterIP", func(t *testing.T) {
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
		brokerPod(t, c, ns, "zk", class.Name, 1)
		serviceAnnotated(t, c, ns, "listener-zk-1", nil)
		updateClass(t, c, class.Name, func(s *v1alpha1.ListenerClassSpec) {
			s.ServiceType = v1alpha1.ServiceTypeLoadBalancer
			s.LoadBalancerClass = ptr.To("listeners.test/none")
			s.ServiceAnnotations = map[string]string{"example.test/pool": "private"}
			s.LoadBalancerSharing = &v1alpha1.LoadBalancerSharing{From: 9000, To: 9001}
		})
		reconciletest.WaitReason(t, ctx, c, ns, "listener-zk-1", v1alpha1.ReasonSharedPortsExhausted)
		svc := serviceAnnotated(t, c, ns, "listener-zk-1", map[string]string{"example.test/pool": "private", v1alpha1.AnnotationMetalLBSharedIP: ""})
		if svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service of type %s, want ClusterIP until the range has room", svc.Spec.Type)
		}
	})
}

// serviceAnnotated waits until Listener name's Service has each annotation
// of want ("": none) and returns it.
func serviceAnnotated(t *testing.T, c client.Client, ns, name string, want map[string]string) *corev1.Service {
	t.Helper()
	return reconciletest.GetService(t, t.Context(), c, ns, names.ServiceName(name), func(s *corev1.Service) error {
		for k, v := range want {
			if got, ok := s.Annotations[k]; got != v || v == "" && ok {
				return fmt.Errorf("annotation %s=%q, want %q", k, got, v)
			}
		}
		return nil
	})
}

func updateClass(t *testing.T, c client.Client, name string, change func(*v1alpha1.ListenerClassSpec)) {
	t.Helper()
	testenv.Converges(t, "update "+name, func() error {
		class := &v1alpha1.ListenerClass{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, class); err != nil {
			return err
		}
		change(&class.Spec)
		return c.Update(t.Context(), class)
	})
}
