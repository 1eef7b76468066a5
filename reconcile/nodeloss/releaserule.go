package nodeloss

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Remedies, the remedy label of listener_operator_pinned_node_lost.
const (
	// RemedyAutomatic: the operator releases the claim (now, or when the
	// node has been NotReady for the class's timeout).
	RemedyAutomatic = "automatic"
	// RemedyDeleteNode: the class releases on node deletion and the node is
	// NotReady but still exists: delete the Node once the machine is gone.
	RemedyDeleteNode = "delete-node"
	// RemedyAnnotateClaim: the class never releases: annotate the claim.
	RemedyAnnotateClaim = "annotate-claim"
	// RemedyOutOfServiceTaint: released, but the pod is stuck terminating on
	// a NotReady node: taint the node out of service.
	RemedyOutOfServiceTaint = "out-of-service-taint"
	// RemedyDeletePod: released, but the Pending pod has no controller to
	// recreate it: delete and recreate it by hand.
	RemedyDeletePod = "delete-pod"
)

// nodeState is what matters of the node a volume is pinned to.
type nodeState struct {
	exists        bool
	ready         bool
	notReadySince time.Time // when Ready last left True (exists && !ready)
	unschedulable bool
}

// stateOf reads a Node (nil: it does not exist).
func stateOf(n *corev1.Node) nodeState {
	if n == nil {
		return nodeState{}
	}
	st := nodeState{exists: true, unschedulable: n.Spec.Unschedulable, notReadySince: n.CreationTimestamp.Time}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			st.ready = c.Status == corev1.ConditionTrue
			st.notReadySince = c.LastTransitionTime.Time
		}
	}
	return st
}

// usable reports whether a pod pinned to the node can run there.
func (s nodeState) usable() bool { return s.exists && s.ready && !s.unschedulable }

// claimInfo is a listener claim pinned to a node.
type claimInfo struct {
	namespace, name string
	node            string // the node its volume is pinned to
	class           string // its ListenerClass, "" if unknown
	listener        string // the Listener it uses
	// release and timeout are the class's policy (see EffectivePinnedNodeLoss).
	release v1alpha1.PinnedNodeRelease
	timeout time.Duration
	// manual is the value of v1alpha1.AnnotationReleasePinnedNode.
	manual string
}

// decision is what to do about one pinned claim.
type decision struct {
	lost    bool          // the node is gone (deleted, or NotReady long enough to say so)
	release bool          // delete the claim now
	trigger string        // what released it: NodeDeleted, NodeNotReady, Annotation
	recheck time.Duration // look again after this long (0: on the next event)
	remedy  string        // the metric's remedy label when lost and not released
	message string        // for events and the Listener condition
}

// decide applies a class's policy to a pinned claim and the state of its
// node at now.
func decide(c claimInfo, n nodeState, now time.Time) decision {
	if c.manual != "" && c.manual == c.node {
		return decision{lost: !n.usable(), release: true, trigger: "Annotation",
			message: fmt.Sprintf("releasing listener claim %s/%s from node %s as its annotation %s asks", c.namespace, c.name, c.node, v1alpha1.AnnotationReleasePinnedNode)}
	}
	annotate := fmt.Sprintf("kubectl annotate pvc -n %s %s %s=%s", c.namespace, c.name, v1alpha1.AnnotationReleasePinnedNode, c.node)
	keep := fmt.Sprintf("Listener %s keeps its name and node ports; only the node address changes", c.listener)
	if !n.exists {
		if c.release == v1alpha1.PinnedNodeReleaseNever {
			return decision{lost: true, remedy: RemedyAnnotateClaim, message: fmt.Sprintf(
				"listener claim %s/%s is pinned to node %s, which no longer exists, so its pods cannot be scheduled (volume node affinity conflict); "+
					"ListenerClass %s does not release pinned volumes (pinnedNodeLoss.release: Never). Release it with: %s (%s)",
				c.namespace, c.name, c.node, c.class, annotate, keep)}
		}
		return decision{lost: true, release: true, trigger: "NodeDeleted", message: fmt.Sprintf(
			"listener claim %s/%s was pinned to node %s, which no longer exists; released it (ListenerClass %s, pinnedNodeLoss.release: %s): "+
				"the claim is recreated and pinned to the node its next pod runs on; %s",
			c.namespace, c.name, c.node, c.class, c.release, keep)}
	}
	if n.ready {
		return decision{}
	}
	since := now.Sub(n.notReadySince)
	timeout := c.timeout
	if c.release != v1alpha1.PinnedNodeReleaseNodeNotReady {
		// Only explain, and only once the node has been down long
		// enough that it is not a reboot.
		timeout = v1alpha1.DefaultNotReadyTimeout
	}
	if since < timeout {
		return decision{recheck: timeout - since}
	}
	down := fmt.Sprintf("listener claim %s/%s is pinned to node %s, which has not been Ready since %s",
		c.namespace, c.name, c.node, n.notReadySince.UTC().Format(time.RFC3339))
	switch c.release {
	case v1alpha1.PinnedNodeReleaseNodeNotReady:
		return decision{lost: true, release: true, trigger: "NodeNotReady", message: fmt.Sprintf(
			"%s (longer than notReadyTimeout %s of ListenerClass %s); released it: %s. "+
				"A pod still on %s stays Terminating until its kubelet confirms; if the machine is down, mark it: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (the operator never force-deletes pods)",
			down, timeout, c.class, keep, c.node, c.node)}
	case v1alpha1.PinnedNodeReleaseNever:
		return decision{lost: true, remedy: RemedyAnnotateClaim, message: fmt.Sprintf(
			"%s; ListenerClass %s does not release pinned volumes (pinnedNodeLoss.release: Never). If the node is gone for good, release it with: %s (%s)",
			down, c.class, annotate, keep)}
	default:
		return decision{lost: true, remedy: RemedyDeleteNode, message: fmt.Sprintf(
			"%s; ListenerClass %s releases it when the Node object is deleted: if the machine is gone for good, run kubectl delete node %s, or release the claim now with: %s (%s)",
			down, c.class, c.node, annotate, keep)}
	}
}
