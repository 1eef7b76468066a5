package robustness

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// kwokBin is kwok v0.8.0 (make's $(KWOK), hack/kwok); "" skips
// TestKwokMarksPublishedPodsRunning.
var kwokBin = flag.String("robustness.kwok", "", "kwok binary (bin/tools/kwok): check that kwok, with hack/kwok/robustness-stages.yaml, marks a pod Running only once it is annotated as published")

// TestKwokMarksPublishedPodsRunning is the first step towards kwok in
// place of the suite's Kubelet (docs/reconcile.md, "Promises"): kwok
// against the suite's API server, with the stages of
// hack/kwok/robustness-stages.yaml, leaves a pod on its node Pending until
// the annotation the CSI step would set is there, then marks it Running
// without touching its readiness gate, and finishes its deletion.
func TestKwokMarksPublishedPodsRunning(t *testing.T) {
	testenv.Require(t, env)
	if *kwokBin == "" {
		t.Skip("set -robustness.kwok to kwok's binary (make bin/tools/kwok)")
	}
	ctx := t.Context()
	p, err := env.StartProcess(filepath.Join(t.TempDir(), "kwok.log"), *kwokBin, "--kubeconfig="+env.Kubeconfig,
		"--config="+filepath.Join("..", "..", "hack", "kwok", "robustness-stages.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := cluster.Admin
	testenv.Create(t, ctx, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-n1", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}})
	testenv.Create(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kwok-exp"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kwok-exp"}, Spec: corev1.PodSpec{NodeName: "kwok-n1", AutomountServiceAccountToken: ptr.To(false),
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.test/gate"}},
		Containers:     []corev1.Container{{Name: "c", Image: "x"}}}}
	testenv.Create(t, ctx, c, pod)
	time.Sleep(8 * time.Second) // kwok has had its chance
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Fatalf("phase %s before the pod was annotated as published, want Pending", pod.Status.Phase)
	}
	pod.Annotations = map[string]string{"robust.test/published": "true"}
	if err := c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "kwok marks the published pod Running", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil
	})
	for _, cond := range pod.Status.Conditions {
		if cond.Type == "example.test/gate" {
			t.Errorf("kwok set the readiness gate's condition: %+v", cond)
		}
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "kwok finishes the pod's deletion", func() error {
		return absent(c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})
}

// absent is nil for a NotFound error, else why the object is not gone.
func absent(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return errors.New("still there")
}
