package robustness

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// world is a snapshot of one world with class slot 0 of op's shape and,
// for each tenant, a Listener "web" (port 80) and its Service, which
// change edits.
func world(class Op, change func(s *Snapshot)) *Snapshot {
	w := NewWorld(7)
	c := w.Class(class)
	s := &Snapshot{World: w, Classes: map[string]*v1alpha1.ListenerClass{c.Name: c}}
	for t, ns := range w.Tenants {
		uid := types.UID(ns + "-web")
		s.Listeners[t] = []v1alpha1.Listener{{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: uid},
			Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To(c.Name), Ports: []v1alpha1.ListenerPort{{Name: "p0", Port: 80}}},
			Status: v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady}}},
		}}
		s.Services[t] = []corev1.Service{{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: uid + "-svc", Annotations: map[string]string{}, Labels: map[string]string{},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Listener", Name: "web", UID: uid, Controller: ptr.To(true)}}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceType(class.Type), Ports: []corev1.ServicePort{{Name: "p0", Port: 80}}},
		}}
	}
	if change != nil {
		change(s)
	}
	return s
}

// breachRow is one row of TestInvariantsFindBreaches.
type breachRow struct {
	name   string
	inv    func(Step) []string
	change func(s *Snapshot)
	tenant Op
	answer Answer
	// refused are the operator's refused writes of the step.
	refused []testenv.Write
	want    string // in the breach; "" for none
	// class: slot 0's shape when not clusterIP (sharing: share); prev:
	// the state before the operation when not the good one.
	class *Op
	prev  func(s *Snapshot)
}

// TestInvariantsFindBreaches: each invariant holds on a world as the
// operator should leave it and reports each breach it is there for.
func TestInvariantsFindBreaches(t *testing.T) {
	clusterIP := Op{Kind: PutClass, Type: v1alpha1.ServiceTypeClusterIP, Template: 4, Mode: v1alpha1.TenantMetadataWarn, Network: "internal"}
	ok := func(s *Snapshot) {
		for t := range s.Services {
			s.Services[t][0].Annotations[networkKey] = "internal"
		}
	}
	tests := []breachRow{
		{name: "as it should be", inv: ServicesFollowTheirClass, change: ok},
		{name: "a type the class does not give", inv: ServicesFollowTheirClass, change: func(s *Snapshot) { ok(s); s.Services[0][0].Spec.Type = corev1.ServiceTypeLoadBalancer }, want: "is of type LoadBalancer"},
		{name: "a tenant's network", inv: ServicesFollowTheirClass, change: func(s *Snapshot) { s.Services[1][0].Annotations[networkKey] = "public" }, want: `metallb.io/address-pool="public"`},
		{name: "Warn adds a key", inv: ServicesFollowTheirClass, change: func(s *Snapshot) { ok(s); s.Services[0][0].Labels[offListPrefix+"cost"] = "c" }, want: "never adds a key"},
		{name: "a portless Listener's Service stays", inv: ServicesFollowTheirClass, change: func(s *Snapshot) { ok(s); s.Listeners[1][0].Spec.Ports = nil }, want: "has no ports"},
		{name: "ports of another Listener", inv: ServicesFollowTheirClass, change: func(s *Snapshot) { ok(s); s.Services[0][0].Spec.Ports[0].Port = 81 }, want: "has ports"},
		{name: "two Listeners, one name", inv: HostnamesPublishedOnce, change: func(s *Snapshot) {
			for t := range s.Services {
				s.Services[t][0].Annotations[v1alpha1.AnnotationExternalDNSHostname] = "web." + s.World.Domain
			}
		}, want: "both carry the external-dns name"},
		{name: "a condition names the other tenant", inv: NoOtherTenantNamed, change: func(s *Snapshot) {
			s.Listeners[0][0].Status.Conditions[0].Message = "taken by " + s.World.Tenants[1] + "/web"
		}, want: "names namespace rb7-tenant-b"},
		{name: "an answer names the other tenant", inv: NoOtherTenantNamed, tenant: Op{Kind: PutListener, Tenant: 1},
			answer: Answer{Warnings: []string{"Listener rb7-tenant-a/web has it"}}, want: "the answer to tenant 1"},
		{name: "the other tenant's Service replaced", inv: TenantStaysInItsNamespace, tenant: Op{Kind: DeleteListener, Tenant: 1},
			change: func(s *Snapshot) { s.Services[0][0].UID = "new" }, want: "deleted or replaced"},
		{name: "an admin may change anything", inv: TenantStaysInItsNamespace, tenant: Op{Kind: DeleteService},
			change: func(s *Snapshot) { s.Services[0][0].UID = "new" }},
		{name: "a refused write unseen", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "patch", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 403}},
			want: "shows it nowhere"},
		{name: "a refused write said", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "patch", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 422}},
			change: func(s *Snapshot) {
				s.Listeners[0][0].Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalid}
			}},
		{name: "a claim's Listener write refused, unseen", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "update", Resource: "listeners", Namespace: "rb7-tenant-a", Name: "web", Code: 422}},
			want: "does not say so"},
		{name: "a claim's Listener write refused, said", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "update", Resource: "listeners", Namespace: "rb7-tenant-a", Name: "web", Code: 422}},
			change: func(s *Snapshot) {
				s.Listeners[0][0].Status.Conditions = append(s.Listeners[0][0].Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionClaimApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWriteRefused})
			}},
		{name: "a forbidden write said", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "create", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 403}},
			change: func(s *Snapshot) { quotaRefused(s, "exceeded quota: "+quotaName, true) }},
		{name: "a forbidden write without its event", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "create", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 403}},
			change: func(s *Snapshot) { quotaRefused(s, "exceeded quota: "+quotaName, false) }, want: "has no Warning event"},
		{name: "a quota not named", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "create", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 403}},
			change: func(s *Snapshot) { quotaRefused(s, "exceeded quota", true) }, want: "does not name the quota"},
		{name: "a forbidden write under another reason", inv: RefusedWritesVisible, refused: []testenv.Write{{Verb: "create", Resource: "services", Namespace: "rb7-tenant-a", Name: "web", Code: 403}},
			change: func(s *Snapshot) {
				s.Listeners[0][0].Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalid, Message: "x"}
			}, want: "not ServiceRefused"},
		{name: "held back after the lift", inv: RefusalsHealWhenLifted, tenant: Op{Kind: LiftQuota},
			change: func(s *Snapshot) { quotaRefused(s, "exceeded quota: "+quotaName, true) }, want: "still say their Service is refused"},
		{name: "healed after the lift", inv: RefusalsHealWhenLifted, tenant: Op{Kind: LiftQuota}},
		{name: "not Ready without a word", inv: NotReadySaysWhy, change: func(s *Snapshot) {
			s.Listeners[0][0].Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}
		}, want: "without a reason and message"},
	}
	tests = append(tests, sharingBreaches()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, good := clusterIP, ok
			if tt.class != nil {
				class, good = *tt.class, replicaOne
			}
			if tt.prev != nil {
				good = tt.prev
			}
			prev := world(class, good)
			wantBreach(t, tt.inv(Step{Prev: prev, Cur: world(class, tt.change), Op: tt.tenant, Answer: tt.answer, Refused: tt.refused}), tt.want)
		})
	}
}

// quotaRefused makes tenant a's Listener say its Service was refused with
// message msg, with a Warning event when event.
func quotaRefused(s *Snapshot, msg string, event bool) {
	l := &s.Listeners[0][0]
	l.Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonServiceRefused, Message: msg}
	if event {
		s.Events[0] = []eventsv1.Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonServiceRefused, Regarding: corev1.ObjectReference{Kind: "Listener", Name: l.Name, UID: l.UID}}}
	}
}

// wantBreach fails t unless got (an invariant's breaches) has one saying
// want, or none when want is "".
func wantBreach(t *testing.T, got []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("breaches %q, want none", got)
	case want != "" && !strings.Contains(strings.Join(got, "\n"), want):
		t.Errorf("breaches %q, want one saying %q", got, want)
	}
}

// TestShrinkKeepsWhatBreaks: shrinking drops every operation the breach
// does not need and keeps the ones it does, in order.
func TestShrinkKeepsWhatBreaks(t *testing.T) {
	ops := Generate(3, 12)
	need := []Op{ops[2], ops[7], ops[11]}
	replay := func(_ context.Context, h []Op) (*Failure, error) {
		i := 0
		for j, op := range h {
			if i < len(need) && reflect.DeepEqual(op, need[i]) {
				if i++; i == len(need) {
					return &Failure{Invariant: "X", Ops: h[:j+1]}, nil
				}
			}
		}
		return nil, nil
	}
	f, _ := replay(context.Background(), ops)
	small, done, err := Shrink(context.Background(), f, replay, time.Minute)
	if err != nil || !done {
		t.Fatalf("Shrink: done %v, err %v", done, err)
	}
	if !reflect.DeepEqual(small.Ops, need) {
		t.Errorf("shrunk to %#v\nwant %#v", small.Ops, need)
	}
}

// TestHistoriesRepeat: a seed gives one history, and a row prints it as
// the literal that makes it again.
func TestHistoriesRepeat(t *testing.T) {
	if a, b := Generate(42, 30), Generate(42, 30); !reflect.DeepEqual(a, b) {
		t.Fatal("one seed gave two histories")
	}
	op := Op{Kind: PutListener, Tenant: 1, Name: "web", Ports: []int32{80}, Labels: []string{"team=a"}}
	if got, want := op.GoString(), `{Kind: PutListener, Tenant: 1, Name: "web", Ports: []int32{80}, Labels: []string{"team=a"}}`; got != want {
		t.Errorf("GoString %s\nwant     %s", got, want)
	}
}
