// Package conditions is the one writer of a Listener's status: each
// controller that writes part of it (api/v1alpha1's ownership table: the
// Listener controller, the certificate controller, node loss) writes that
// part through a Writer, with a server-side apply under its own field
// manager, so no writer overwrites another's fields or retries on
// another's write. What a writer owns is read from the table, and it
// refuses to write a condition or field the table gives to another.
// Conditions follow the metav1 rule: lastTransitionTime moves only when
// the condition's status changes (Set).
package conditions

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Set returns a copy of conds with cond set by the metav1 rule: its
// lastTransitionTime is now when it is new or its status changes, and the
// current one otherwise.
func Set(conds []metav1.Condition, cond metav1.Condition, now time.Time) []metav1.Condition {
	out := slices.Clone(conds)
	cond.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(&out, cond)
	return out
}

// Next is cond as it is written over the conditions current at now: of the
// Listener's generation, with lastTransitionTime by the metav1 rule (Set).
func Next(current []metav1.Condition, cond metav1.Condition, generation int64, now time.Time) metav1.Condition {
	cond.ObservedGeneration = generation
	return *meta.FindStatusCondition(Set(current, cond, now), cond.Type)
}

// Writer writes the part of Listeners' status that the ownership table
// (api/v1alpha1) gives to one controller.
type Writer struct {
	owner v1alpha1.StatusWriter
}

// For is the Writer of controller w.
func For(w v1alpha1.StatusWriter) Writer { return Writer{owner: w} }

// Owns reports whether the table gives conditions of type typ to w.
func (w Writer) Owns(typ string) bool {
	owner, ok := v1alpha1.ConditionWriter(typ)
	return ok && owner == w.owner
}

// Owned is the part of st that w writes: its fields and its conditions.
func (w Writer) Owned(st v1alpha1.ListenerStatus) v1alpha1.ListenerStatus {
	out := st
	v := reflect.ValueOf(&out).Elem()
	for i, name := range statusFields() {
		if owner, _ := v1alpha1.StatusFieldWriter(name); name != "" && owner != w.owner {
			v.Field(i).SetZero()
		}
	}
	out.Conditions = nil
	for _, c := range st.Conditions {
		if w.Owns(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// With is st with w's part replaced by owned (the other writers' fields and
// conditions kept, their conditions in their place).
func (w Writer) With(st, owned v1alpha1.ListenerStatus) v1alpha1.ListenerStatus {
	out := w.Owned(owned)
	v, from := reflect.ValueOf(&out).Elem(), reflect.ValueOf(st)
	for i, name := range statusFields() {
		if owner, _ := v1alpha1.StatusFieldWriter(name); name != "" && owner != w.owner {
			v.Field(i).Set(from.Field(i))
		}
	}
	ours := out.Conditions
	out.Conditions = nil
	for _, c := range st.Conditions {
		if !w.Owns(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	out.Conditions = append(out.Conditions, ours...)
	return out
}

// Foreign names the parts of st the table gives to another writer than w
// ("" when there are none).
func (w Writer) Foreign(st v1alpha1.ListenerStatus) string {
	var out []string
	for _, c := range st.Conditions {
		if !w.Owns(c.Type) {
			owner, _ := v1alpha1.ConditionWriter(c.Type)
			out = append(out, fmt.Sprintf("condition %s (the table's writer: %q)", c.Type, owner))
		}
	}
	v := reflect.ValueOf(st)
	for i, name := range statusFields() {
		if owner, _ := v1alpha1.StatusFieldWriter(name); name != "" && owner != w.owner && !v.Field(i).IsZero() {
			out = append(out, fmt.Sprintf("field %s (the table's writer: %q)", name, owner))
		}
	}
	return strings.Join(out, ", ")
}

// Apply writes st, w's part of Listener l's status, as a server-side apply
// under w's field manager: what st leaves out of w's part is removed, the
// rest of the status left as it is. It refuses a status with parts the
// table gives to another writer. It returns the Listener as the API server
// has it after the write.
func (w Writer) Apply(ctx context.Context, c client.Client, l *v1alpha1.Listener, st v1alpha1.ListenerStatus) (*v1alpha1.Listener, error) {
	if foreign := w.Foreign(st); foreign != "" {
		return nil, fmt.Errorf("controller %s may not write %s of listener %s/%s: api/v1alpha1's status ownership table gives them to another controller", w.owner, foreign, l.Namespace, l.Name)
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, fmt.Errorf("status of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener",
		"metadata": map[string]any{"namespace": l.Namespace, "name": l.Name, "uid": string(l.UID)},
		"status":   status,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(w.owner.FieldManager()), client.ForceOwnership); err != nil {
		return nil, err
	}
	updated := &v1alpha1.Listener{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, updated); err != nil {
		return nil, fmt.Errorf("read back listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return updated, nil
}

// ApplyCondition writes cond on Listener l (Next over l's conditions at
// now) as w's only condition; with cond nil it removes the one w wrote.
func (w Writer) ApplyCondition(ctx context.Context, c client.Client, l *v1alpha1.Listener, cond *metav1.Condition, now time.Time) (*v1alpha1.Listener, error) {
	var st v1alpha1.ListenerStatus
	if cond != nil {
		st.Conditions = []metav1.Condition{Next(l.Status.Conditions, *cond, l.Generation, now)}
	}
	return w.Apply(ctx, c, l, st)
}

// statusFields are the JSON names of ListenerStatus's fields, by index
// ("" for the conditions, which go by type).
func statusFields() []string {
	t := reflect.TypeFor[v1alpha1.ListenerStatus]()
	out := make([]string, t.NumField())
	for i := range out {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "conditions" {
			out[i] = name
		}
	}
	return out
}
