// Package caches says what the controller manager's caches hold: which fields of
// which types the informers keep in memory. It is the one place to look when
// asking "what does a replica hold for each object of the cluster".
//
// At 10,000 pods a whole Pod (containers, env, probes, managedFields) costs
// about 26 KB of heap; the reconcilers read only its metadata, its
// claim-backed volumes, its node, its node affinity and its phase. The
// transforms here keep exactly what the code reads, so an ordinary pod costs
// a few hundred bytes. They are plain value-in/value-out functions, applied
// by the informers before an object is stored, and idempotent (an informer
// may hand an already trimmed object back).
//
// There are two caches. The manager's own (options Webhooks) runs on every
// replica and holds what the admission webhooks read; the reconcilers' (options
// Reconcilers, see LeaderOnly) runs on the leader only and holds what only
// they read. The types both read (Shared) are held once, in the manager's:
// the reconcilers' view routes their reads, watches and indexes there.
//
// managedFields are dropped from everything, from a Service once the
// operator has applied it: until then the listener reconciler hands the
// fields its create set over to server-side apply (csaupgrade), which reads
// them. Claims, volumes and nodes keep only the fields
// read.
//
// What is not a listener's costs nothing: pods, claims, volumes and
// Services are selected by a label (the listener-volume label, Marked,
// which the webhooks put on listener pods and claims and the claim
// reconciler on their volumes; app.kubernetes.io/name=listener, which every
// Service of the operator carries), so the cluster's others are never
// sent; EndpointSlices are not cached at all. Strings and small label
// maps that repeat across objects are held once (intern.go), each cache
// sharing its own.
//
// Nothing outside the package reaches a cached object (readonly.go): the
// manager's cache is made by New, the reconcilers' by LeaderOnly, and both
// hand out copies on every path (reads, whatever their options; event
// handlers, predicates and map functions; index functions), so no caller
// can write to what a cache holds (TestNothingReachesACachedObject). A
// KeyIndex (keyindex.go) answers a question about what a cache holds with
// keys, or with a few fields copied, for the pod webhook's hot path.
// docs/reconcile.md ("What the controller caches") has the table of what
// each kind keeps and costs, docs/benchmarks.md what each of these tricks
// saves.
package caches
