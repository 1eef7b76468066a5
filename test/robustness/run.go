package robustness

import (
	"github.com/listener-operator/listener-operator/internal/testenv"

	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Cluster is what the runner acts through: the administrator, the two
// tenants (impersonated, bound to the built-in edit role in their
// namespaces) with the warnings the API server sent each, and the audit
// log of the operator's writes.
type Cluster struct {
	Admin    client.Client
	Tenants  [2]client.Client
	Warnings [2]*Warnings
	Audit    *testenv.AuditLog
	// Kubelet binds the world's pods and publishes their listener
	// volumes through the CSI node service, for kwok to run them (nil:
	// pods stay Pending).
	Kubelet *Kubelet
	// Window is how long the operator must write nothing to count as
	// settled; Bound how long the runner waits for that at most; Quiet
	// how long after settling (the invariants' check included) it must
	// still write nothing.
	Window, Bound, Quiet time.Duration
	// Timing adds up where the operations' time goes (nil: not counted).
	Timing *Timing
	// Faults restart the operator and switch the webhooks off and on.
	Faults *Faults
	// quotas are the namespaces a PutQuota caps now (quota.go).
	quotas map[string]bool
	// Gateway is Traefik (nil: gateway classes are not played).
	Gateway *GatewayEnv
}

// Warnings collects the warnings the API server sends one client
// (a rest.WarningHandler).
type Warnings struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeader keeps a warning.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings kept since the last take.
func (w *Warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// Failure is a broken promise: which, after which operation of which
// history.
type Failure struct {
	Seed      uint64
	Invariant string
	Lines     []string
	// Ops are the history up to the operation after which it broke.
	Ops []Op
}

func (f *Failure) Error() string {
	return fmt.Sprintf("seed %d: %s broken after operation %d (%#v):\n  %s", f.Seed, f.Invariant, len(f.Ops), f.Ops[len(f.Ops)-1], strings.Join(f.Lines, "\n  "))
}

// Row is the failure as a row of the regression table.
func (f *Failure) Row() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{name: %q, seed: %d, ops: []Op{\n", f.Invariant, f.Seed)
	for _, op := range f.Ops {
		fmt.Fprintf(&b, "\t%#v,\n", op)
	}
	b.WriteString("}},")
	return b.String()
}

// Run plays ops in world w, checking every invariant once the operator
// settled after each and counting what it reached in cov (nil: nothing):
// nil when all held, the first Failure otherwise, an
// error when the runner itself could not go on.
func (c *Cluster) Run(ctx context.Context, w World, seed uint64, ops []Op, cov *Coverage) (*Failure, error) {
	if err := c.prepare(ctx, w); err != nil {
		return nil, err
	}
	defer c.cleanup(ctx, w)
	var prev *Snapshot
	for i, op := range ops {
		fail := func(inv string, lines []string) *Failure {
			return &Failure{Seed: seed, Invariant: inv, Lines: lines, Ops: append([]Op(nil), ops[:i+1]...)}
		}
		catchesUp := c.Faults.catchesUp(op) // faults.go
		t0 := time.Now()
		answer, err := c.apply(ctx, w, op)
		if err != nil {
			return nil, fmt.Errorf("operation %d %#v: %w", i, op, err)
		}
		t0 = c.Timing.since("apply", t0)
		if err := c.runPods(ctx, w, op); err != nil {
			return nil, err
		}
		t0 = c.Timing.since("pods", t0)
		st, err := c.settle(ctx, w)
		if err != nil {
			return nil, err
		}
		t0 = c.Timing.since("settle", t0)
		settled := t0
		if !st.settled {
			return fail("Settles", append([]string{fmt.Sprintf("the operator still writes after %s; its last writes:", c.Bound)}, st.writes...)), nil
		}
		if changed := objectWrites(c.withoutRetries(st.all, st.took)); op.Kind == RestartOperator && !catchesUp && len(changed) > 0 {
			// Nothing changed but the operator: what it finds is what it
			// made, and a reconcile of that writes nothing.
			return fail("RestartWritesNothing", append([]string{"the operator, restarted with nothing changed, wrote:"}, changed...)), nil
		}
		cur, err := Take(ctx, c.Admin, w)
		if err != nil {
			return nil, err
		}
		if err := c.observePods(ctx, cur); err != nil {
			return nil, err
		}
		step := Step{Prev: prev, Cur: cur, Op: op, Answer: answer, WebhooksOff: c.Faults != nil && c.Faults.off, Refused: st.refused}
		cov.add(step)
		for _, inv := range Invariants() {
			if lines := inv.Check(step); len(lines) > 0 {
				return fail(inv.Name, lines), nil
			}
		}
		t0 = c.Timing.since("check", t0)
		if lines, err := c.quiet(ctx, w, st.mark, t0.Sub(settled)); err != nil || len(lines) > 0 {
			return fail("QuietAfterSettling", lines), err
		}
		c.Timing.since("quiet", t0)
		prev = cur
	}
	return nil, nil
}

// settling is what settle saw: where the audit log ended, the
// operator's writes in the world's namespaces until then (the last few
// when it did not settle) and those of them the API server refused, and
// how long it took.
type settling struct {
	mark    int64
	writes  []string
	refused []testenv.Write
	settled bool
	all     []testenv.Write
	took    time.Duration
}

// settlePoll is how often settle reads the audit log: a tenth of the
// shortest Window it is used with, so that a settled operator is seen
// within a tenth of that.
const settlePoll = 50 * time.Millisecond

// settle waits until the audit log shows no write of the operator in the
// world's namespaces for c.Window and the operator has judged every
// Listener's current spec (settled), at most c.Bound. Writes
// elsewhere (a world before this one being torn down, cluster-wide
// volumes) do not count.
func (c *Cluster) settle(ctx context.Context, w World) (settling, error) {
	start := time.Now()
	var st settling
	var err error
	if st.mark, err = c.Audit.Mark(); err != nil {
		return st, err
	}
	changed := start
	for {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(settlePoll):
		}
		fresh, end, err := c.Audit.Writes(st.mark)
		if err != nil {
			return st, err
		}
		st.mark = end
		if mine := w.writes(fresh); len(mine) > 0 {
			st.writes, changed = append(st.writes, mine...), time.Now()
			st.all = append(st.all, w.mine(fresh)...)
		}
		if time.Since(changed) >= c.Window {
			// A quiet window alone is not settled on a loaded machine: a
			// Listener the operator has not judged yet would be written
			// after it, with nothing changed.
			judged, err := operatorIdle() // idle.go
			if err != nil {
				return st, err
			}
			if judged {
				if judged, err = c.judged(ctx, w); err != nil {
					return st, err
				}
			}
			if judged {
				// With Traefik: and it judged every route, which the
				// operator judges Listeners by (gatewayinvariants.go).
				if judged, err = c.routesJudged(ctx, w); err != nil {
					return st, err
				}
			}
			if judged {
				st.settled, st.refused, st.took = true, unresolved(st.all), time.Since(start)
				return st, nil
			}
		}
		if time.Since(start) > c.Bound {
			st.writes = st.writes[max(0, len(st.writes)-10):]
			return st, nil
		}
	}
}

// judged reports whether the operator has judged every Listener of the
// world as its spec is now: a Ready condition for its current generation.
func (c *Cluster) judged(ctx context.Context, w World) (bool, error) {
	for _, ns := range w.Tenants {
		var ls v1alpha1.ListenerList
		if err := c.Admin.List(ctx, &ls, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for i := range ls.Items {
			l := &ls.Items[i]
			ready := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
			if l.DeletionTimestamp == nil && (ready == nil || ready.ObservedGeneration != l.Generation) {
				return false, nil
			}
		}
	}
	return true, nil
}

// writes are those of ws in the world's namespaces.
func (w World) writes(ws []testenv.Write) []string {
	var out []string
	for _, x := range ws {
		if x.Namespace == w.Tenants[0] || x.Namespace == w.Tenants[1] {
			out = append(out, x.String())
		}
	}
	return out
}

// objectWrites are the writes of ws other than events: a restarted
// operator reports a problem that persists (a node's address annotation
// it skips, tenant metadata it leaves off a Service) again, once, by an
// event; a report is not a change.
func objectWrites(ws []testenv.Write) []string {
	var out []string
	for _, x := range ws {
		if x.Resource != "events" {
			out = append(out, x.String())
		}
	}
	return out
}

// mine are the writes of ws in the world's namespaces.
func (w World) mine(ws []testenv.Write) []testenv.Write {
	var out []testenv.Write
	for _, x := range ws {
		if x.Namespace == w.Tenants[0] || x.Namespace == w.Tenants[1] {
			out = append(out, x)
		}
	}
	return out
}

// unresolved are the writes of ws the API server refused and that no
// later write of the same object in ws made good, leaving out conflicts,
// AlreadyExists and NotFound, which the operator resolves itself.
func unresolved(ws []testenv.Write) []testenv.Write {
	var out []testenv.Write
	for i, x := range ws {
		if x.Code < 400 || x.Code == 404 || x.Code == 409 {
			continue
		}
		good := slices.ContainsFunc(ws[i+1:], func(y testenv.Write) bool {
			return y.Resource == x.Resource && y.Namespace == x.Namespace && y.Name == x.Name && y.Code < 300
		})
		if !good {
			out = append(out, x)
		}
	}
	return out
}

// quiet waits until c.Quiet has passed since the operator settled
// (elapsed ago: the invariants' check counts towards it) and returns the
// operator's writes in the world's namespaces since mark, if any:
// QuietAfterSettling, the promise that a settled operator stays so.
func (c *Cluster) quiet(ctx context.Context, w World, mark int64, elapsed time.Duration) ([]string, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(c.Quiet - elapsed):
	}
	all, _, err := c.Audit.Writes(mark)
	writes := w.writes(c.withoutRetries(all, c.Quiet))
	if len(writes) > 0 {
		writes = append([]string{"the operator wrote after it had settled, with nothing changed:"}, writes...)
	}
	return writes, err
}

// put creates want, or updates the object of its name with set.
func put[T client.Object](ctx context.Context, c client.Client, want T, set func(have, want T)) error {
	have := want.DeepCopyObject().(T)
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), have); apierrors.IsNotFound(err) {
		return c.Create(ctx, want)
	} else if err != nil {
		return err
	}
	set(have, want)
	return c.Update(ctx, have)
}

// prepare makes the tenants' namespaces and binds each tenant to edit in
// its own.
func (c *Cluster) prepare(ctx context.Context, w World) error {
	if w.Gateway {
		if err := c.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.GatewayNamespace()}}); err != nil {
			return fmt.Errorf("prepare world %s: %w", w.Prefix, err)
		}
	}
	for t, ns := range w.Tenants {
		// Only tenant a's routes reach a Gateway section of "Selector".
		labels := map[string]string{gatewayAccessLabel: map[bool]string{true: "allowed", false: "no"}[t == 0]}
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "edit", Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: w.Users[t]}},
			},
		}
		for _, o := range objs {
			if err := c.Admin.Create(ctx, o); err != nil {
				return fmt.Errorf("prepare world %s: %w", w.Prefix, err)
			}
		}
	}
	return c.prepareNodes(ctx, w)
}

// cleanup deletes the world's classes and namespaces (the namespace
// controller deletes what they hold).
func (c *Cluster) cleanup(parent context.Context, w World) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 30*time.Second)
	defer cancel()
	if c.Faults != nil && c.Faults.off {
		// The next history starts with the webhooks on.
		if err := c.webhooksOn(ctx); err == nil {
			_ = c.restart(ctx)
		}
	}
	c.cleanupNodes(ctx, w)
	for i := range shareSlot + 1 { // the admin's slots and the sharing class's
		_ = c.Admin.Delete(ctx, w.Class(Op{Class: i}))
	}
	for _, ns := range w.Tenants {
		delete(c.quotas, ns)
		_ = c.Admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if w.Gateway {
		_ = c.Admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.GatewayNamespace()}})
	}
}
