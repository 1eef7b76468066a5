package robustness

import (
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// kwokBin is kwok v0.8.0 (make's $(KWOK), hack/kwok); "" is
// bin/tools/kwok.
var kwokBin = flag.String("robustness.kwok", "", "kwok binary that marks the histories' pods Running (default bin/tools/kwok, built by make bin/tools/kwok)")

// TestKwokMarksPublishedPodsRunning checks the stages of
// hack/kwok/robustness-stages.yaml, as the suite's kwok plays them (TestMain):
// a pod on a kwok node stays Pending until the annotation the CSI step sets
// is there, then kwok marks it Running and Ready without touching its
// readiness gate; once deleted, it stays until the CSI step withdrew the
// annotation (kubelet unmounts before it removes the pod), then kwok
// removes it.
func TestKwokMarksPublishedPodsRunning(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	c := cluster.Admin
	testenv.Create(t, ctx, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-n1", Annotations: map[string]string{kwokNodeAnnotation: "fake"}}})
	testenv.Create(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kwok-exp"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kwok-exp"}, Spec: corev1.PodSpec{NodeName: "kwok-n1", AutomountServiceAccountToken: ptr.To(false),
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.test/gate"}},
		Containers:     []corev1.Container{{Name: "c", Image: "x"}}}}
	testenv.Create(t, ctx, c, pod)
	get := func() *corev1.Pod {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	testenv.Converges(t, "kwok made the node Ready", func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "kwok-n1"}, node); err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", node.Status.Conditions)
	})
	time.Sleep(3 * time.Second) // kwok has had its chance
	if phase := get().Status.Phase; phase != corev1.PodPending {
		t.Fatalf("phase %s before the pod was annotated as published, want Pending", phase)
	}
	annotate := func(v string) {
		t.Helper()
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, publishedAnnotation, v)
		if err := c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	annotate("true")
	testenv.Converges(t, "kwok marks the published pod Running and Ready", func() error {
		if p := get(); p.Status.Phase != corev1.PodRunning || !podstate.Ready(p) {
			return fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
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
	time.Sleep(3 * time.Second) // kwok has had its chance
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatalf("kwok removed the pod before its volumes were unpublished: %v", err)
	}
	annotate("false")
	testenv.Converges(t, "kwok finishes the unpublished pod's deletion", func() error {
		return absent(c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})
	_ = c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-n1"}})
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
