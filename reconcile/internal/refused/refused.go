// Package refused tells the user when the API server refuses one of the
// operator's own writes for a reason that retrying alone does not fix: an
// admission webhook or policy denies it, a quota forbids it, the schema
// rejects it (an Invalid or Forbidden status). Without it such a write was
// retried with backoff and logged, and nobody who could fix it saw why. A
// refusal becomes a Warning event on the object the user made, carrying
// the API server's message, and, when the write was of a Listener that
// exists, a condition on that Listener (written alone, through
// reconcile/conditions). Nothing is written during admission: the
// reporting controller writes after the API server answered it.
package refused

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// Message is the API server's message when err refuses a write (Invalid
// or Forbidden: what an admission webhook's or policy's denial, a quota or
// the schema answer), and whether it does.
func Message(err error) (string, bool) {
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return "", false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message, true
	}
	return err.Error(), true
}

// Condition is the condition of type typ that says a write of a Listener
// was refused: False, reason WriteRefused, with note (Note).
func Condition(typ, note string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWriteRefused, Message: v1alpha1.TruncateMessage(note)}
}

// Note is what the user is told of a refusal with message msg of the
// operator's write (a phrase: "update of Listener web").
func Note(write, msg string) string {
	return fmt.Sprintf("the API server refused the operator's %s: %s; the operator tries again with backoff, and the write goes through once what refused it allows it", write, msg)
}

// Reporter reports the refusals of one controller's writes.
type Reporter struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Reason is the events' reason.
	Reason string
	// Condition is the type of the condition written on a Listener, by
	// Writer (the status-ownership table must give it that type).
	Condition string
	Writer    v1alpha1.StatusWriter
	// Now is the clock of the condition's lastTransitionTime (nil:
	// time.Now).
	Now func() time.Time
}

// Report tells the user when err, the API server's answer to write (a
// phrase: "update of Listener web"), refuses it: a Warning event on
// regarding and, when l is not nil, r.Condition False on l (not written
// again while l carries it as it is). It returns whether err refuses the
// write, and the error of the condition's write.
func (r Reporter) Report(ctx context.Context, regarding runtime.Object, l *v1alpha1.Listener, write string, err error) (bool, error) {
	msg, ok := Message(err)
	if !ok {
		return false, nil
	}
	note := Note(write, msg)
	var related runtime.Object
	if l != nil {
		related = l
	}
	r.Recorder.Eventf(regarding, related, corev1.EventTypeWarning, r.Reason, "Write", "%s", note)
	if l == nil {
		return true, nil
	}
	cond := Condition(r.Condition, note)
	if old := meta.FindStatusCondition(l.Status.Conditions, r.Condition); old != nil &&
		old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return true, nil
	}
	if _, err := conditions.For(r.Writer).ApplyCondition(ctx, r.Client, l, &cond, r.now()); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	return true, nil
}

// Accepted removes r.Condition from l when l carries it: a write of l went
// through, or nothing is left to write.
func (r Reporter) Accepted(ctx context.Context, l *v1alpha1.Listener) error {
	if l == nil || meta.FindStatusCondition(l.Status.Conditions, r.Condition) == nil {
		return nil
	}
	_, err := conditions.For(r.Writer).ApplyCondition(ctx, r.Client, l, nil, r.now())
	return client.IgnoreNotFound(err)
}

func (r Reporter) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}
