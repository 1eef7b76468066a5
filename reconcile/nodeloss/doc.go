// Package nodeloss recovers listener volumes pinned to a node that is gone.
//
// A listener volume of a class with pinnedNodePorts: true is pinned to the
// node its first pod ran on: its PersistentVolume carries (immutable) node
// affinity, and the pod webhook copies that affinity into every later pod
// of the claim. When that node is deleted (or, by policy, has not been Ready
// for a while), the pod stays Pending with "volume node affinity conflict"
// forever. This controller detects that, explains it (events on the claim
// and its pods, the Listener condition PinnedNodesAvailable, the metric
// listener_operator_pinned_node_lost) and, as the ListenerClass's
// spec.pinnedNodeLoss allows, releases the pin:
//
//  1. the claim's own Listener is marked for the claim that will be
//     recreated under the same name (annotation
//     listeners.stackable.tech/handover-to-claim), so that the Listener
//     keeps its name, Service and node ports;
//  2. the listener claim is deleted (never any other claim) with orphan
//     propagation: the garbage collector removes the claim's controller
//     reference from the Listener instead of deleting it;
//  3. a Pending, unscheduled pod that still requires the lost node (the pod
//     webhook's node affinity is immutable) is deleted once its claim is no
//     longer pinned there, if a controller (a StatefulSet) recreates it.
//
// The StatefulSet then recreates claim and pod; the new volume is pinned to
// the node the pod lands on. Pods are never force-deleted. A handed-over
// Listener whose claim does not come back is deleted after a timeout.
//
// It keeps nothing in process memory, so that a new leader carries on
// where the last one stopped: the release records the node on the
// Listener it hands over (v1alpha1.AnnotationReleasedFromNode), and a NodeLost
// explanation is recorded only when the object's latest NodeLost event
// (read from the API server) does not already say it; the events of what
// was done follow the one delete that did it.
//
// Files by job: mapping.go (watches, event to request),
// observe.go (reads), releaserule.go (decide: pure), release.go (acting on
// claims), pods.go (deleting pods), handover.go (expiring hand-overs),
// report.go (the condition and events), metrics.go; controller.go is the
// reconciler's flow.
//
// The package is set up by the registry (reconcile.Controllers, when
// --pinned-node-recovery is on), with the cache indexes of
// reconcile/internal/lookup. It imports api/ for the rules and caches for
// the pod-by-claim lookup it shares with the other controllers
// (caches.PodsOfClaim); never webhooks/ or csi/.
package nodeloss
