// Package robustness checks the operator's promises against generated
// histories (issue 49): a seeded generator (generate.go) picks operations
// of an administrator (ListenerClasses of every service type, node-port
// ranges, hostname templates and tenant-metadata modes, changed and
// deleted; Services deleted; faults.go: the operator restarted, the
// webhooks switched off and on; quota.go: a tenant's Services capped by a
// ResourceQuota, so that the operator's writes are refused for good, and
// the cap lifted; the nodes' address annotations; with Traefik
// (-robustness.gateway, make robustness; gateway.go, gatewaytraefik.go):
// Gateways with TLS and TCP sections and classes routed through them,
// TLSRoute classes and TCPRoute classes whose parents are a block of TCP
// sections (tcp.go), whose routes, sections and published addresses the
// invariants of gatewayinvariants.go, tcpinvariants.go and tcpready.go
// judge; share.go: a class slot of its own with
// spec.loadBalancerSharing, narrowed and switched to a plain LoadBalancer
// class and back, drawn from a stream of its own in addition to a
// history's operations) and of two tenants who hold only the built-in
// `edit` role and act through impersonation (Listeners with labels,
// objectOverrides and ports; listener claims; standalone pods with
// listener volumes; StatefulSets created, scaled, deleted and recreated
// under the same name: pods.go, podsgen.go; StatefulSets of the sharing
// class whose pods share a bootstrap Listener, that Listener with
// overrides of the sharing key, and a Listener of the class no pod
// mounts: share.go, judged by shareinvariants.go). kwok (kwok.go, started once
// in every run; hack/kwok/robustness-stages.yaml) runs the histories' fake
// nodes: it keeps their leases, marks a pod Running and Ready once the
// suite published its volumes, and finishes a graceful delete once they
// are unpublished. No scheduler or real kubelet runs: the suite's Kubelet
// (podskubelet.go, podscsi.go) binds pods to the world's nodes and calls
// the CSI driver's node service in this process, publishing each pod's
// listener volumes before kwok runs it and unpublishing them before kwok
// removes it. After each operation the
// runner (run.go; timing.go adds up the time of each phase of an
// operation and prints it at the end of a run) waits until the operator has settled, that is written
// nothing for a while as the API server's audit log counts it (internal/testenv/audit.go)
// with its workqueues empty (idle.go) and, with Traefik, every route judged,
// and checks every invariant (invariants.go): plain functions, each named
// for the promise it checks, over what the API server holds (snapshot.go)
// and what each Running pod reads from its volumes (podstold.go); a gated
// pod's readiness-gate condition is judged against api/podready's verdict
// (podgate.go).
//
// An operation (ops.go) is a flat value that prints as a Go literal; one
// table (play.go) says of each kind who plays it and what it does; a
// World gives each history classes, namespaces and a DNS domain of its
// own. Coverage (coverage.go) counts what the histories reached, so that a
// passing run shows it did more than have its operations refused;
// isolation.go holds the promise that one tenant's operation leaves the
// other's namespace alone, refused.go the promise that a write of the
// operator's the API server refused shows on its Listener.
//
// A failure prints its seed and the shortest sequence of operations that
// still fails (shrink.go) as a Go table row: paste it into regressions in
// robustness_test.go.
//
// The control plane (kube-apiserver with an audit log, kube-controller-
// manager with the clusterrole-aggregation, garbage-collector, namespace,
// statefulset, ephemeral-volume and persistentvolume-binder controllers) and the operator's webhooks and reconcilers run in the test
// process (main_test.go). `make test` runs a short fixed-seed budget,
// `make robustness` random seeds for a while, and `make
// robustness-mutants` the fixed budget against each test-only mutant
// (build tags robustness_mutant_<name>) to show the suite finds them.
// docs/reconcile.md, "Promises", lists what it checks and what it cannot
// reach yet.
package robustness
