package listener

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// steadyRow is one state a Listener settles in: setup makes it in
// namespace ns (with what puts it in that state) and returns its name;
// want accepts the Listener once it is in that state.
type steadyRow struct {
	name  string
	setup func(t *testing.T, s *steadyEnv, ns string) string
	want  func(*v1alpha1.Listener) error
	// node is the node the test's pod runs on (the shared one when "").
	node string
}

// steadyEnv is what the rows share: the cluster and its nodes.
type steadyEnv struct {
	c       client.Client
	node    string // a node with an internal address
	badNode string // a node whose node address annotation has a bad entry
}

// TestSteadyStateWritesNothing: a Listener settled in any state its
// conditions can show is not written again by reconciles that change
// nothing (a label the Service does not take, an annotation on its class,
// on its Service, a pod of its claim turning ready): the API server's
// audit log shows no write by the operator to a Listener or a Service of
// the namespace, and no condition's lastTransitionTime moves (issue 46).
func TestSteadyStateWritesNothing(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	s := &steadyEnv{c: c, node: ns + "-good", badNode: ns + "-bad"}
	reconciletest.Node(t, ctx, c, s.node, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.2.0.1"})
	bad := reconciletest.Node(t, ctx, c, s.badNode, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.2.0.2"})
	bad.Annotations = map[string]string{v1alpha1.AnnotationNodeAddress: "198.51.100.9, not_a_name"}
	if err := c.Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	// Installed once for the gateway rows (after TestGatewayClass, which
	// needs it missing at first, in a run of the whole package).
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	for _, row := range steadyRows(s) {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			_, ctx, ns := reconciletest.Setup(t)
			name := row.setup(t, s, ns)
			node := row.node
			if node == "" {
				node = s.node
			}
			checkSteady(t, ctx, s, ns, name, node, row.want)
		})
	}
}

// checkSteady settles Listener ns/name in the state want accepts, touches
// what it is reconciled for and fails t on any write that follows.
func checkSteady(t *testing.T, ctx context.Context, s *steadyEnv, ns, name, node string, want func(*v1alpha1.Listener) error) {
	c := s.c
	key := types.NamespacedName{Namespace: ns, Name: name}
	claim := reconciletest.ListenerClaim(ns, "touch", map[string]string{v1alpha1.AnnotationListenerName: name})
	testenv.Create(t, ctx, c, claim)
	pod := reconciletest.ServingPod(t, ctx, c, ns, "touch", node, false, claim.Name)
	before := settle(t, ctx, c, key, want)
	svcBefore := serviceOf(t, ctx, c, before)
	mark := reconciletest.MarkAudit(t)

	touches := []struct {
		what  string
		touch func() error
	}{
		{"label the Listener (a key the Service takes from the operator)", func() error {
			return mergePatch(ctx, c, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, `{"metadata":{"labels":{"app.kubernetes.io/name":"steady"}}}`)
		}},
		{"annotate the class", func() error {
			if before.Spec.ClassName == nil || *before.Spec.ClassName == "" {
				return errSkip
			}
			err := mergePatch(ctx, c, &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: *before.Spec.ClassName}}, `{"metadata":{"annotations":{"steady.test/touch":"1"}}}`)
			if apierrors.IsNotFound(err) {
				return errSkip
			}
			return err
		}},
		{"annotate the Service", func() error {
			if svcBefore == nil {
				return errSkip
			}
			return mergePatch(ctx, c, svcBefore.DeepCopy(), `{"metadata":{"annotations":{"steady.test/touch":"1"}}}`)
		}},
		{"a pod of its claim turns ready", func() error {
			reconciletest.SetPodReady(t, ctx, c, pod, true)
			return nil
		}},
	}
	for _, tc := range touches {
		n := reconciletest.Reconciles.Count(ControllerName, key)
		if err := tc.touch(); err == errSkip {
			continue
		} else if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		testenv.Converges(t, "a reconcile after: "+tc.what, func() error {
			_, err := reconciletest.Reconciles.Quiet(ControllerName, key, n)
			return err
		})
	}
	after := settle(t, ctx, c, key, want)
	if writes := reconciletest.OperatorWrites(t, mark, ns); len(writes) > 0 {
		t.Errorf("the operator wrote at steady state: %v", writes)
	}
	for _, old := range before.Status.Conditions {
		now := meta.FindStatusCondition(after.Status.Conditions, old.Type)
		if now == nil || !now.LastTransitionTime.Equal(&old.LastTransitionTime) {
			t.Errorf("condition %s: %+v, was %+v", old.Type, now, old)
		}
	}
	checkConditionOwners(t, after)
	if !reflect.DeepEqual(before.Status, after.Status) {
		t.Errorf("status changed at steady state:\n%+v\nwas\n%+v", after.Status, before.Status)
	}
	if svcAfter := serviceOf(t, ctx, c, after); svcBefore != nil && (svcAfter == nil || !reflect.DeepEqual(svcAfter.Spec, svcBefore.Spec)) {
		t.Errorf("Service changed at steady state: %+v, was %+v", svcAfter, svcBefore.Spec)
	}
}

// errSkip: a touch that does not apply to the row (no class, no Service).
var errSkip = fmt.Errorf("skip")

// settle waits until Listener key is in the state want accepts and its
// controller has been quiet for a second, and returns it.
func settle(t *testing.T, ctx context.Context, c client.Client, key types.NamespacedName, want func(*v1alpha1.Listener) error) *v1alpha1.Listener {
	t.Helper()
	l := &v1alpha1.Listener{}
	testenv.Converges(t, "listener "+key.String()+" settles", func() error {
		n, err := reconciletest.Reconciles.Quiet(ControllerName, key, 0)
		if err != nil {
			return err
		}
		if err := c.Get(ctx, key, l); err != nil {
			return err
		}
		if err := want(l); err != nil {
			return err
		}
		time.Sleep(time.Second)
		if m, err := reconciletest.Reconciles.Quiet(ControllerName, key, 0); err != nil || m != n {
			return fmt.Errorf("reconciled %d times meanwhile (%v)", m-n, err)
		}
		return nil
	})
	return l
}

// serviceOf is the Listener's Service, nil when it has none.
func serviceOf(t *testing.T, ctx context.Context, c client.Client, l *v1alpha1.Listener) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)}, svc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(svc); owner == nil || owner.UID != l.UID {
		return nil // another Listener's (name collision)
	}
	return svc
}

func mergePatch(ctx context.Context, c client.Client, o client.Object, patch string) error {
	return c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// condition accepts a Listener whose condition typ has reason (and Ready
// has readyReason, unless "").
func condition(typ, reason, readyReason string) func(*v1alpha1.Listener) error {
	return func(l *v1alpha1.Listener) error {
		if c := meta.FindStatusCondition(l.Status.Conditions, typ); c == nil || c.Reason != reason {
			return fmt.Errorf("condition %s %+v, want reason %s", typ, c, reason)
		}
		if got, _ := reconciletest.ReadyReason(l); readyReason != "" && got != readyReason {
			return fmt.Errorf("Ready reason %s, want %s", got, readyReason)
		}
		return nil
	}
}

// ready accepts a Listener whose Ready condition has reason.
func ready(reason string) func(*v1alpha1.Listener) error {
	return condition(v1alpha1.ConditionReady, reason, "")
}

// checkConditionOwners fails t when a condition of l is owned, in its
// managedFields, by another field manager than the one of the writer the
// status ownership table names for it (or by more than one).
func checkConditionOwners(t *testing.T, l *v1alpha1.Listener) {
	t.Helper()
	owners := map[string][]string{}
	for _, mf := range l.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				Conditions map[string]json.RawMessage `json:"f:conditions"`
			} `json:"f:status"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields.Status.Conditions {
			var key struct{ Type string }
			if typ, ok := strings.CutPrefix(k, "k:"); ok && json.Unmarshal([]byte(typ), &key) == nil {
				owners[key.Type] = append(owners[key.Type], mf.Manager)
			}
		}
	}
	for _, c := range l.Status.Conditions {
		w, ok := v1alpha1.ConditionWriter(c.Type)
		if got := owners[c.Type]; !ok || len(got) != 1 || got[0] != w.FieldManager() {
			t.Errorf("condition %s is owned by field managers %v; the status ownership table names %q (%s)", c.Type, got, w, w.FieldManager())
		}
	}
}
