package listener

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// brokerPod is pod <sts>-<i> of StatefulSet sts (labelled with its name,
// as the StatefulSet controller labels it), serving kafka 9092 and internal 9093,
// mounting its own listener claim and the shared claim "bootstrap".
func brokerPod(t *testing.T, c client.Client, ns, sts, class string, i int) {
	t.Helper()
	name := fmt.Sprintf("%s-%d", sts, i)
	claim := reconciletest.ListenerClaim(ns, "listener-"+name, map[string]string{v1alpha1.AnnotationListenerClass: class})
	p := reconciletest.PodWithPorts(ns, name, claim.Name, corev1.ContainerPort{Name: "kafka", ContainerPort: 9092}, corev1.ContainerPort{Name: "internal", ContainerPort: 9093})
	p.Labels = map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelStatefulSetPodName: name}
	p.Spec.Volumes = append(p.Spec.Volumes, reconciletest.ClaimVolume("bootstrap", sts+"-bootstrap"))
	testenv.Create(t, t.Context(), c, claim, p)
}

// sharedService waits until Listener name's Service carries key and
// ports (name → port), and returns it.
func sharedService(t *testing.T, c client.Client, ns, name, key string, ports map[string]int32) *corev1.Service {
	t.Helper()
	defer func() {
		if t.Failed() {
			l := &v1alpha1.Listener{}
			err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, l)
			t.Logf("Listener %s: %v %+v", name, err, l.Status.Conditions)
		}
	}()
	return reconciletest.GetService(t, t.Context(), c, ns, names.ServiceName(name), func(s *corev1.Service) error {
		if s.Annotations[v1alpha1.AnnotationMetalLBSharedIP] != key || s.Annotations[v1alpha1.AnnotationCiliumSharingKey] != key {
			return fmt.Errorf("sharing annotations %v, want %s on both", s.Annotations, key)
		}
		if len(s.Spec.Ports) != len(ports) {
			return fmt.Errorf("ports %v, want %v", s.Spec.Ports, ports)
		}
		for _, p := range s.Spec.Ports {
			if p.Port != ports[p.Name] {
				return fmt.Errorf("ports %v, want %v", s.Spec.Ports, ports)
			}
		}
		if v, ok := s.Annotations["lbipam.cilium.io/sharing-cross-namespace"]; ok {
			return fmt.Errorf("sharing-cross-namespace %q", v)
		}
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			return fmt.Errorf("externalTrafficPolicy %s", s.Spec.ExternalTrafficPolicy)
		}
		return nil
	})
}

// TestLoadBalancerSharing (issue 51): on a class with
// spec.loadBalancerSharing 9000-9005, the Listeners of StatefulSet kafka
// (per replica, and the bootstrap its pods share) carry one sharing key,
// replica i on ports 9000 + 2i + j (its ports in spec.ports order: the claim's Listener sorts them by name), the bootstrap on the last block; the
// port the pod serves is the targetPort; the tenant's overrides of the key
// and the traffic policy do not reach the final Service; another
// StatefulSet gets another key (the same ports); a replica whose ports the
// bootstrap holds, and one beyond the range, get no Service and say why;
// the status publishes the shared IP with each Listener's own ports, and a
// Service the load balancer gave another IP says it is not shared.
func TestLoadBalancerSharing(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerClass: ptr.To("listeners.test/none"), LoadBalancerAllocateNodePorts: ptr.To(false),
		LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9005}})
	kafka := ns + "/kafka"

	boot := reconciletest.Listener(ns, "kafka-bootstrap", class.Name, reconciletest.Port("kafka", 9092), reconciletest.Port("internal", 9093))
	boot.Labels = map[string]string{"lbipam.cilium.io/sharing-key": "evil"}
	boot.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: fmt.Appendf(nil,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q,"annotations":{"metallb.io/allow-shared-ip":"evil","lbipam.cilium.io/sharing-cross-namespace":"*"}},"spec":{"externalTrafficPolicy":"Local"}}`,
		names.ServiceName("kafka-bootstrap"))}}
	testenv.Create(t, ctx, c, boot, reconciletest.ListenerClaim(ns, "kafka-bootstrap", map[string]string{v1alpha1.AnnotationListenerName: "kafka-bootstrap"}))
	// No pod mounts it yet: its workload, so its key, is not known.
	reconciletest.WaitReason(t, ctx, c, ns, "kafka-bootstrap", v1alpha1.ReasonAwaitingWorkload)

	brokerPod(t, c, ns, "kafka", class.Name, 0)
	sharedService(t, c, ns, "kafka-bootstrap", kafka, map[string]int32{"kafka": 9004, "internal": 9005})
	s0 := sharedService(t, c, ns, "listener-kafka-0", kafka, map[string]int32{"internal": 9000, "kafka": 9001})
	brokerPod(t, c, ns, "kafka", class.Name, 1)
	sharedService(t, c, ns, "listener-kafka-1", kafka, map[string]int32{"internal": 9002, "kafka": 9003})
	for _, p := range s0.Spec.Ports {
		if want := map[string]int32{"kafka": 9092, "internal": 9093}[p.Name]; p.TargetPort.IntVal != want {
			t.Errorf("port %s: targetPort %v, want %d (the port the pod serves)", p.Name, p.TargetPort, want)
		}
	}
	brokerPod(t, c, ns, "zk", class.Name, 0)
	sharedService(t, c, ns, "listener-zk-0", ns+"/zk", map[string]int32{"internal": 9000, "kafka": 9001})

	// Replica 2 wants 9004-9005: the bootstrap's, which keeps them.
	brokerPod(t, c, ns, "kafka", class.Name, 2)
	l := reconciletest.WaitReason(t, ctx, c, ns, "listener-kafka-2", v1alpha1.ReasonSharedPortTaken)
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "port 9004") ||
		!strings.Contains(msg, "held by Service "+names.ServiceName("kafka-bootstrap")) || !strings.Contains(msg, "widen the range") {
		t.Errorf("Ready message %q", msg)
	}
	brokerPod(t, c, ns, "kafka", class.Name, 3)
	l = reconciletest.WaitReason(t, ctx, c, ns, "listener-kafka-3", v1alpha1.ReasonSharedPortsExhausted)
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "replica 3 needs ports 9006-9007") || !strings.Contains(msg, "widen spec.loadBalancerSharing") {
		t.Errorf("Ready message %q", msg)
	}
	for _, name := range []string{"listener-kafka-2", "listener-kafka-3"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ServiceName(name)}, &corev1.Service{}); err == nil {
			t.Errorf("%s got a Service", name)
		}
	}
	sharedService(t, c, ns, "kafka-bootstrap", kafka, map[string]int32{"kafka": 9004, "internal": 9005})

	// The load balancer shares with kafka-0 and kafka-1, not the bootstrap.
	reconciletest.SetIngress(t, c, ns, names.ServiceName("listener-kafka-0"), "192.0.2.10")
	reconciletest.SetIngress(t, c, ns, names.ServiceName("listener-kafka-1"), "192.0.2.10")
	reconciletest.SetIngress(t, c, ns, names.ServiceName("kafka-bootstrap"), "192.0.2.11")
	reconciletest.WaitStatus(t, ctx, c, ns, "listener-kafka-1", func(l *v1alpha1.Listener) error {
		if len(l.Status.IngressAddresses) != 1 || l.Status.IngressAddresses[0].Address != "192.0.2.10" ||
			l.Status.IngressAddresses[0].Ports["internal"] != 9002 || l.Status.IngressAddresses[0].Ports["kafka"] != 9003 {
			return fmt.Errorf("ingress addresses %+v, want 192.0.2.10 with internal 9002, kafka 9003", l.Status.IngressAddresses)
		}
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionLoadBalancerShared); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("LoadBalancerShared %+v", cond)
		}
		return nil
	})
	reconciletest.WaitStatus(t, ctx, c, ns, "kafka-bootstrap", func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionLoadBalancerShared)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonSharingRefused ||
			!strings.Contains(cond.Message, "address 192.0.2.11, not 192.0.2.10") || !strings.Contains(cond.Message, "it does not share") {
			return fmt.Errorf("LoadBalancerShared %+v", cond)
		}
		return nil
	})
}
