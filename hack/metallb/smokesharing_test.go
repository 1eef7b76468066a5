//go:build metallb

package metallb

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// TestMetalLBSharesOneIPPerStatefulSet (issue 51) runs after
// TestMetalLBControllerAssigns (this file's name sorts after
// smoke_test.go), whose objects it leaves alone (createOnce): the operator's
// reconcilers and MetalLB's controller against one API server. The
// per-replica Listeners of a 3-replica StatefulSet of a class with
// spec.loadBalancerSharing get ONE IP from MetalLB, on ports from,
// from+1, from+2; a second StatefulSet's Listener gets another IP (the
// same port: ports are counted per sharing key); a replica whose port a
// Service unknown to the operator holds under the key gets another IP
// from MetalLB and says so (SharingRefused). No pod runs (no
// kubelet): the pods, claims and Listeners are what the StatefulSet
// controller, the webhooks and the claim reconciler would make.
func TestMetalLBSharesOneIPPerStatefulSet(t *testing.T) {
	env := testenv.Require(t, env)
	root := testenv.RepoRoot()
	controller := filepath.Join(root, "bin", "tools", "metallb-controller")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "bin", "metallb-crds")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install MetalLB's CRDs (make metallb-tools): %v", err)
	}
	c := env.Client
	const shareNS = "sharing"
	self := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "controller", Namespace: "metallb-system"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "metallb-controller"}}}}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
		"metadata": map[string]any{"name": "sharing", "namespace": "metallb-system"},
		"spec":     map[string]any{"addresses": []any{"198.51.100.8/29"}, "autoAssign": true},
	}}
	createOnce(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metallb-system"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shareNS}}, pool, self)
	startController(t, env, controller, self.Name)
	startOperator(t, env)

	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "shared-lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(lbClass), LoadBalancerAllocateNodePorts: ptr.To(false),
		// With several pools MetalLB may give a Service of a key an IP
		// of another pool (seen here, with the smoke test's pool): a
		// sharing class names its pool (docs/install.md).
		ServiceAnnotations:  map[string]string{"metallb.io/address-pool": "sharing"},
		LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}}}
	createOnce(t, ctx, c, class)
	pods := []string{"kafka-0", "kafka-1", "kafka-2", "zk-0"}
	for _, pod := range pods {
		replica(t, ctx, c, shareNS, pod, class.Name)
	}
	got := map[string]v1alpha1.ListenerIngress{}
	var table strings.Builder
	fmt.Fprintf(&table, "| Listener | address MetalLB gave | port | LoadBalancerShared |\n|---|---|---|---|\n")
	for _, pod := range pods {
		name := "listener-" + pod
		testenv.Eventually(t, 60*time.Second, "an address for Listener "+name, func() error {
			l := &v1alpha1.Listener{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: shareNS, Name: name}, l); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionLoadBalancerShared)
			if len(l.Status.IngressAddresses) == 0 || cond == nil || cond.Status != metav1.ConditionTrue {
				return fmt.Errorf("addresses %+v, LoadBalancerShared %+v, conditions %+v", l.Status.IngressAddresses, cond, l.Status.Conditions)
			}
			got[pod] = l.Status.IngressAddresses[0]
			fmt.Fprintf(&table, "| %s | %s | %d | %s |\n", name, got[pod].Address, got[pod].Ports["kafka"], cond.Reason)
			return nil
		})
	}
	t.Log("\n" + table.String())
	for i, pod := range pods[:3] {
		if got[pod].Address != got["kafka-0"].Address || got[pod].Ports["kafka"] != int32(9000+i) {
			t.Errorf("%s: %s port %d, want %s port %d (kafka-0's IP, from + %d)", pod, got[pod].Address, got[pod].Ports["kafka"], got["kafka-0"].Address, 9000+i, i)
		}
	}
	if got["zk-0"].Address == got["kafka-0"].Address || got["zk-0"].Ports["kafka"] != 9000 {
		t.Errorf("zk-0: %s port %d, want an IP other than kafka's %s, port 9000", got["zk-0"].Address, got["zk-0"].Ports["kafka"], got["kafka-0"].Address)
	}

	// A Service the operator does not know of holds 9003 under kafka's
	// key on kafka's IP: replica 3 asks for kafka's IP, MetalLB cannot
	// give it (the port clashes) and says why, and the Listener quotes it.
	squatter := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: shareNS,
		Annotations: map[string]string{v1alpha1.AnnotationMetalLBSharedIP: shareNS + "/kafka", "metallb.io/address-pool": "sharing"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(lbClass), AllocateLoadBalancerNodePorts: ptr.To(false),
			Selector: map[string]string{"app": "squatter"}, Ports: []corev1.ServicePort{{Name: "x", Port: 9003}}}}
	createOnce(t, ctx, c, squatter)
	testenv.Eventually(t, 20*time.Second, "kafka's address for the squatter", func() error {
		s := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(squatter), s); err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 || s.Status.LoadBalancer.Ingress[0].IP != got["kafka-0"].Address {
			return fmt.Errorf("ingress %+v, want %s", s.Status.LoadBalancer.Ingress, got["kafka-0"].Address)
		}
		return nil
	})
	replica(t, ctx, c, shareNS, "kafka-3", class.Name)
	testenv.Eventually(t, 60*time.Second, "listener-kafka-3 says what MetalLB refused", func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: shareNS, Name: "listener-kafka-3"}, l); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Reason != v1alpha1.ReasonAwaitingLoadBalancer || !strings.Contains(ready.Message, "AllocationFailed") || len(l.Status.IngressAddresses) != 0 {
			return fmt.Errorf("Ready %+v, addresses %+v", ready, l.Status.IngressAddresses)
		}
		t.Logf("listener-kafka-3: %s", ready.Message)
		return nil
	})
}

// replica creates StatefulSet pod name (labelled as the StatefulSet
// controller and the pod webhook label it), serving kafka on 9092, and
// its listener claim of class.
func replica(t *testing.T, ctx context.Context, c client.Client, ns, name, class string) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "listener-" + name, Namespace: ns, Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class},
			Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelStatefulSetPodName: name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kafka", Image: "kafka", Ports: []corev1.ContainerPort{{Name: "kafka", ContainerPort: 9092}}}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}},
	}
	createOnce(t, ctx, c, claim, pod)
}

// createOnce creates objs, leaving the ones that exist (the smoke test of
// this package may have made them).
func createOnce(t *testing.T, ctx context.Context, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// startOperator runs the operator's reconcilers (as cmd/ registers them,
// with the reconcilers' own cache) until the test ends.
func startOperator(t *testing.T, env *testenv.Env) {
	t.Helper()
	opts := options.Default()
	opts.ClusterDomain = "cluster.local"
	opts.GatewayAPI = false
	opts.NodeLoss.Enabled, opts.Provision.Enabled = false, false
	stop, err := env.StartManager(env.Config, testenv.ManagerOptions{
		Cache: caches.Webhooks(),
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			leader, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, err
			}
			return leader, reconcile.SetupWithManager(leader, opts, leader.GetEventRecorder(v1alpha1.FieldManager))
		},
	})
	if err != nil {
		t.Fatalf("start the operator's reconcilers: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("the operator's manager: %v", err)
		}
	})
}
