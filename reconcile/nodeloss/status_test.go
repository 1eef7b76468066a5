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
	if err := r.setCondition(ctx, stale, metav1.ConditionFalse, v1alpha1.ReasonReleased, "released for the test", false); err != nil {
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
	if own := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPinnedNodesAvailable); own == nil || own.Reason != v1alpha1.ReasonReleased {
		t.Errorf("%s %+v, want Released", v1alpha1.ConditionPinnedNodesAvailable, own)
	}
	if own := meta.FindStatusCondition(stale.Status.Conditions, v1alpha1.ConditionReady); own == nil {
		t.Errorf("the copy written from is not brought up to date: %+v", stale.Status.Conditions)
	}
}

// TestConditionTransitionTime: PinnedNodesAvailable follows the metav1 rule
// (meta.SetStatusCondition): its lastTransitionTime moves when its status
// changes, not when only its reason or message does (NodeLost, then
// Released, are both False).
func TestConditionTransitionTime(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, "t-")
	c := e.Client
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "transitions", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}}}
	testenv.Create(t, ctx, c, l)
	start := time.Now().UTC().Truncate(time.Second)
	now := start
	r := &reconciler{client: c, now: func() time.Time { return now }}
	for _, step := range []struct {
		status    metav1.ConditionStatus
		reason    string
		wantSince time.Time
	}{
		{metav1.ConditionFalse, v1alpha1.ReasonNodeLost, start},
		{metav1.ConditionFalse, v1alpha1.ReasonReleased, start},
		{metav1.ConditionTrue, v1alpha1.ReasonAvailable, start.Add(2 * time.Minute)},
		{metav1.ConditionTrue, v1alpha1.ReasonAvailable, start.Add(2 * time.Minute)},
	} {
		if err := r.setCondition(ctx, l, step.status, step.reason, "at "+now.Format(time.RFC3339), false); err != nil {
			t.Fatal(err)
		}
		got := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionPinnedNodesAvailable)
		if got == nil || got.Reason != step.reason || !got.LastTransitionTime.Time.Equal(step.wantSince) {
			t.Errorf("after %s/%s at %s: condition %+v, want lastTransitionTime %s", step.status, step.reason, now, got, step.wantSince)
		}
		now = now.Add(time.Minute)
	}
}
