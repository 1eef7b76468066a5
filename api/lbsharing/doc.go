// Package lbsharing holds the rules of load-balancer classes whose
// replicas share one IP (spec.loadBalancerSharing; docs/reconcile.md,
// "Shared load balancers"), once: which workload a Listener belongs to
// and so its sharing key (WorkloadOf, Key), which Service ports it gets
// (Ask.Assign, the nodePortRange rule from + i×n + j), what its final
// Service carries whatever any override says (Apply), what of it an
// existing Service takes while the range has no room (Held), and whether the
// load balancer did share (Shared). The Listener reconciler asks it; the
// class validation (api/validation) refuses what would break it.
package lbsharing
