//go:build e2e && faultswip

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Fault scenarios of issue 11 that have not yet passed on the project's
// cluster: built only with `-tags e2e,faultswip`, so `make e2e` (and CI)
// does not run them. Run them by hand against a cluster from `make e2e`:
//
//	E2E_KUBECONFIG=$PWD/.work/cluster/kubeconfig go test -tags e2e,faultswip -run 'TestFault' -v ./test/e2e/
//
// Known state: the finished-pod scenario waits for a NoNodes condition that
// did not come within a minute; the kube-apiserver restart failed on a
// zombie process (fixed since, not re-run); the kubelet-restart and
// vanished-class scenarios have never run.

// TestFaultFinishedPodKeepsItsAddress: a restartPolicy Never pod with a
// per-claim NodePort Listener exits. Its Listener keeps its ports, its
// Service and its addresses.
func TestFaultFinishedPodKeepsItsAddress(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-finished")
	if err := k8s.client.Create(ctx, faultPod(ns, "job", e2eNodePortClass, corev1.RestartPolicyNever,
		"sh", "-c", "cat "+treeRoot+"/default-address/ports/http; sleep 20")); err != nil {
		t.Fatal(err)
	}
	claim := "job-listener"
	var running v1alpha1.Listener
	eventually(t, ctx, podTimeout, "the job's Listener published", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &running); err != nil {
			return false, err.Error()
		}
		return running.Status.NodePorts["http"] != 0 && len(running.Status.IngressAddresses) > 0, fmt.Sprintf("%+v", running.Status)
	})
	var pod corev1.Pod
	eventually(t, ctx, podTimeout, "the job finished", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, &pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodSucceeded, podState(&pod)
	})
	// Its endpoint goes; the Listener says so and keeps what it published.
	var l v1alpha1.Listener
	eventually(t, ctx, time.Minute, "the Listener noticed", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonNoNodes, fmt.Sprintf("%+v", l.Status.Conditions)
	})
	if fmt.Sprint(l.Spec.Ports) != fmt.Sprint(running.Spec.Ports) || fmt.Sprint(l.Status.IngressAddresses) != fmt.Sprint(running.Status.IngressAddresses) ||
		l.Status.NodePorts["http"] != running.Status.NodePorts["http"] {
		t.Errorf("after the pod finished: ports %+v, addresses %+v, node ports %v; want %+v, %+v, %v",
			l.Spec.Ports, l.Status.IngressAddresses, l.Status.NodePorts, running.Spec.Ports, running.Status.IngressAddresses, running.Status.NodePorts)
	}
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &corev1.Service{}); err != nil {
		t.Errorf("the Listener's Service: %v", err)
	}
}

// TestFaultKubeAPIServerRestartWhilePodsStart: kube-apiserver restarts while
// pods with listener volumes start; they all reach Running with trees that
// match their Listeners.
func TestFaultKubeAPIServerRestartWhilePodsStart(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-apiserver")
	for i := range 3 {
		if err := k8s.client.Create(ctx, faultPod(ns, fmt.Sprintf("p%d", i), e2eClusterIPClass, corev1.RestartPolicyAlways)); err != nil {
			t.Fatal(err)
		}
	}
	restartClusterProcess(t, ctx, "kube-apiserver")
	for i := range 3 {
		name := fmt.Sprintf("p%d", i)
		podRunning(t, ctx, ns, name, podTimeout)
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-listener"}, &l); err != nil {
			t.Fatal(err)
		}
		if a, _ := defaultAddress(t, tree(t, ctx, ns, name)); len(l.Status.IngressAddresses) == 0 || a != l.Status.IngressAddresses[0].Address {
			t.Errorf("%s reads %s, its Listener publishes %+v", name, a, l.Status.IngressAddresses)
		}
	}
}

// TestFaultKubeletRestartKeepsTrees: kubelet restarts with listener pods
// running; it publishes their volumes again (the existing operator's #284,
// "File exists"), the trees stay whole, and new pods still start.
func TestFaultKubeletRestartKeepsTrees(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-kubelet")
	if err := k8s.client.Create(ctx, faultPod(ns, "steady", e2eNodePortClass, corev1.RestartPolicyAlways)); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "steady", podTimeout)
	before := tree(t, ctx, ns, "steady")
	restartClusterProcess(t, ctx, "kubelet")
	eventually(t, ctx, 2*time.Minute, "the node Ready again", func(ctx context.Context) (bool, string) {
		var nodes corev1.NodeList
		if err := k8s.client.List(ctx, &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					return false, n.Name + " " + c.Reason
				}
			}
		}
		return true, ""
	})
	if err := k8s.client.Create(ctx, faultPod(ns, "after", e2eNodePortClass, corev1.RestartPolicyAlways)); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "after", podTimeout)
	p := podRunning(t, ctx, ns, "steady", podTimeout)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount != 0 {
			t.Errorf("the steady pod's container restarted %d times", cs.RestartCount)
		}
	}
	if after := tree(t, ctx, ns, "steady"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("tree after the kubelet restart %v, before %v", after, before)
	}
}

// TestFaultClassVanishesAndComesBack: a ListenerClass is deleted while the
// webhooks are down (which refuse deleting a class in use). The Listener
// says ClassNotFound and keeps its addresses; when the class comes back it
// is Ready with the same addresses.
func TestFaultClassVanishesAndComesBack(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-class")
	className := ns + "-vanishing"
	class := listenerClass(className, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP})
	ensureClass(t, ctx, class)
	t.Cleanup(func() {
		_ = k8s.client.Delete(context.WithoutCancel(ctx), listenerClass(className, v1alpha1.ListenerClassSpec{}))
	})
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(className), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	if err := k8s.client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	reason := func(want string) *v1alpha1.Listener {
		t.Helper()
		got := &v1alpha1.Listener{}
		eventually(t, ctx, time.Minute, "Listener reason "+want, func(ctx context.Context) (bool, string) {
			if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			return c != nil && c.Reason == want && c.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", got.Status.Conditions)
		})
		return got
	}
	published := reason(v1alpha1.ReasonReady).Status.IngressAddresses

	// The webhooks are down: their configuration is removed for the
	// moment, and put back afterwards whatever happens.
	var hooks admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := k8s.client.List(ctx, &hooks); err != nil {
		t.Fatal(err)
	}
	var saved []admissionregistrationv1.ValidatingWebhookConfiguration
	for _, h := range hooks.Items {
		for _, w := range h.Webhooks {
			if strings.HasSuffix(w.Name, ".listeners.stackable.tech") {
				saved = append(saved, h)
				break
			}
		}
	}
	if len(saved) == 0 {
		t.Fatal("no validating webhook configuration of the operator: is it deployed?")
	}
	restore := func() {
		for _, h := range saved {
			h := h.DeepCopy()
			h.ResourceVersion, h.UID, h.CreationTimestamp, h.ManagedFields = "", "", metav1.Time{}, nil
			if err := k8s.client.Create(context.WithoutCancel(ctx), h); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("restore webhook configuration %s: %v", h.Name, err)
			}
		}
	}
	t.Cleanup(restore)
	for i := range saved {
		if err := k8s.client.Delete(ctx, &saved[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.client.Delete(ctx, listenerClass(className, v1alpha1.ListenerClassSpec{})); err != nil {
		t.Fatalf("delete the class with the webhooks down: %v", err)
	}
	restore()

	gone := reason(v1alpha1.ReasonClassNotFound)
	if fmt.Sprint(gone.Status.IngressAddresses) != fmt.Sprint(published) {
		t.Errorf("without its class the Listener publishes %+v, want the last addresses %+v", gone.Status.IngressAddresses, published)
	}
	ensureClass(t, ctx, class)
	back := reason(v1alpha1.ReasonReady)
	if fmt.Sprint(back.Status.IngressAddresses) != fmt.Sprint(published) {
		t.Errorf("with its class back the Listener publishes %+v, want %+v", back.Status.IngressAddresses, published)
	}
}
