package nodeloss

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestConditionFromStaleCopy: the controller writes its condition from a
// copy of the Listener that another writer (the Listener controller, with
// its Ready condition) has written since. The write neither fails on the
// stale copy (a full update conflicted, and the claim waited a second to
// retry) nor drops or rewinds the other writer's fields.
func TestConditionFromStaleCopy(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, "t-")
	c := e.Client
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}}}
	testenv.Create(t, ctx, c, l)
	stale := l.DeepCopy() // as created: before the Listener controller's status
	testenv.Converges(t, "the Listener controller's Ready condition", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err
		}
		if meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady) == nil {
			return fmt.Errorf("conditions %+v", l.Status.Conditions)
		}
		return nil
	})

	r := &reconciler{client: c, now: time.Now}
	if err := r.setCondition(ctx, stale, metav1.ConditionFalse, ReasonReleased, "released for the test", false); err != nil {
		t.Fatalf("write the condition from a stale copy: %v", err)
	}
	got := &v1alpha1.Listener{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Reason != v1alpha1.ReasonNoClass {
		t.Errorf("Ready %+v after the node-loss write, want the Listener controller's NoClass kept", ready)
	}
	if own := meta.FindStatusCondition(got.Status.Conditions, ConditionPinnedNodesAvailable); own == nil || own.Reason != ReasonReleased {
		t.Errorf("%s %+v, want Released", ConditionPinnedNodesAvailable, own)
	}
	if own := meta.FindStatusCondition(stale.Status.Conditions, v1alpha1.ConditionReady); own == nil {
		t.Errorf("the copy written from is not brought up to date: %+v", stale.Status.Conditions)
	}
}
