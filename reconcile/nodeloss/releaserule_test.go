package nodeloss

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestDecide covers the policy table: for each class policy and node state,
// whether the claim is lost, released, when to look again, the remedy and
// the words a user reads.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	claim := func(release v1alpha1.PinnedNodeRelease, timeout time.Duration) claimInfo {
		return claimInfo{namespace: "ns", name: "listener-web-0", node: "node-b", class: "stable", listener: "listener-web-0", release: release, timeout: timeout}
	}
	gone := nodeState{}
	ready := nodeState{exists: true, ready: true}
	down := func(d time.Duration) nodeState { return nodeState{exists: true, notReadySince: now.Add(-d)} }
	manual := claim(v1alpha1.PinnedNodeReleaseNever, 0)
	manual.manual = "node-b"
	stale := claim(v1alpha1.PinnedNodeReleaseNever, 0)
	stale.manual = "node-a"

	for _, tc := range []struct {
		name          string
		claim         claimInfo
		node          nodeState
		lost, release bool
		trigger       string
		recheck       time.Duration
		remedy        string
		says          []string
	}{
		{name: "ready node", claim: claim(v1alpha1.PinnedNodeReleaseNodeDeleted, 0), node: ready},
		{name: "deleted node, default", claim: claim(v1alpha1.PinnedNodeReleaseNodeDeleted, 0), node: gone, lost: true, release: true, trigger: "NodeDeleted",
			says: []string{"node-b, which no longer exists", "released it", "keeps its name and node ports"}},
		{name: "deleted node, NodeNotReady policy", claim: claim(v1alpha1.PinnedNodeReleaseNodeNotReady, time.Minute), node: gone, lost: true, release: true, trigger: "NodeDeleted"},
		{name: "deleted node, Never", claim: claim(v1alpha1.PinnedNodeReleaseNever, 0), node: gone, lost: true, remedy: RemedyAnnotateClaim,
			says: []string{"node-b, which no longer exists", "pinnedNodeLoss.release: Never", "kubectl annotate pvc -n ns listener-web-0 listeners.stackable.tech/release-pinned-node=node-b"}},
		{name: "not ready shortly, NodeNotReady", claim: claim(v1alpha1.PinnedNodeReleaseNodeNotReady, time.Minute), node: down(20 * time.Second), recheck: 40 * time.Second},
		{name: "not ready long, NodeNotReady", claim: claim(v1alpha1.PinnedNodeReleaseNodeNotReady, time.Minute), node: down(2 * time.Minute), lost: true, release: true, trigger: "NodeNotReady",
			says: []string{"not been Ready since 2026-11-23T11:58:00Z", "kubectl taint node node-b node.kubernetes.io/out-of-service=nodeshutdown:NoExecute", "never force-deletes"}},
		{name: "not ready shortly, default", claim: claim(v1alpha1.PinnedNodeReleaseNodeDeleted, 0), node: down(time.Minute), recheck: v1alpha1.DefaultNotReadyTimeout - time.Minute},
		{name: "not ready long, default", claim: claim(v1alpha1.PinnedNodeReleaseNodeDeleted, 0), node: down(time.Hour), lost: true, remedy: RemedyDeleteNode,
			says: []string{"kubectl delete node node-b", "kubectl annotate pvc"}},
		{name: "not ready long, Never", claim: claim(v1alpha1.PinnedNodeReleaseNever, 0), node: down(time.Hour), lost: true, remedy: RemedyAnnotateClaim, says: []string{"Never"}},
		{name: "annotation for the pinned node", claim: manual, node: ready, release: true, trigger: "Annotation", says: []string{"as its annotation"}},
		{name: "annotation for the pinned node, node gone", claim: manual, node: gone, lost: true, release: true, trigger: "Annotation"},
		{name: "annotation for another node is ignored", claim: stale, node: ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.claim, tc.node, now)
			if d.lost != tc.lost || d.release != tc.release || d.trigger != tc.trigger || d.recheck != tc.recheck || d.remedy != tc.remedy {
				t.Errorf("decide = lost %v release %v trigger %q recheck %s remedy %q; want %v %v %q %s %q",
					d.lost, d.release, d.trigger, d.recheck, d.remedy, tc.lost, tc.release, tc.trigger, tc.recheck, tc.remedy)
			}
			for _, s := range tc.says {
				if !strings.Contains(d.message, s) {
					t.Errorf("message %q does not say %q", d.message, s)
				}
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	node := func(status corev1.ConditionStatus, unschedulable bool) *corev1.Node {
		return &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: unschedulable}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, LastTransitionTime: since},
		}}}
	}
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		usable bool
		ready  bool
	}{
		{"missing", nil, false, false},
		{"ready", node(corev1.ConditionTrue, false), true, true},
		{"cordoned", node(corev1.ConditionTrue, true), false, true},
		{"not ready", node(corev1.ConditionFalse, false), false, false},
		{"unknown", node(corev1.ConditionUnknown, false), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stateOf(tc.node)
			if s.usable() != tc.usable || s.ready != tc.ready {
				t.Errorf("usable %v ready %v, want %v %v", s.usable(), s.ready, tc.usable, tc.ready)
			}
			if tc.node != nil && !tc.ready && !s.notReadySince.Equal(since.Time) {
				t.Errorf("notReadySince %s, want %s", s.notReadySince, since)
			}
		})
	}
}

// TestReleasedSince: the handover timeout counts from the release: the
// released-at annotation, else (a Listener released before it existed)
// the Released condition's transition; a NodeLost condition, whose time is
// when the node was lost, is not the release.
func TestReleasedSince(t *testing.T) {
	lost := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	released := lost.Add(5 * time.Minute)
	cond := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionPinnedNodesAvailable, Status: metav1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(lost)}}
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		conditions  []metav1.Condition
		want        time.Time
		ok          bool
	}{
		{"released-at, condition from the node loss", map[string]string{v1alpha1.AnnotationReleasedAt: released.Format(time.RFC3339)}, cond(v1alpha1.ReasonReleased), released, true},
		{"released before the annotation existed", nil, cond(v1alpha1.ReasonReleased), lost, true},
		{"unreadable released-at", map[string]string{v1alpha1.AnnotationReleasedAt: "yesterday"}, cond(v1alpha1.ReasonReleased), lost, true},
		{"only NodeLost", nil, cond(v1alpha1.ReasonNodeLost), time.Time{}, false},
		{"nothing", nil, nil, time.Time{}, false},
	} {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}, Status: v1alpha1.ListenerStatus{Conditions: tc.conditions}}
		if got, ok := releasedSince(l); !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: releasedSince = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
