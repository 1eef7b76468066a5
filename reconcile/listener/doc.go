// Package listener is the Listener controller: it keeps one Service per
// Listener, shaped by the Listener's ListenerClass and overrides
// (api/service), and publishes the addresses it is reachable on in the
// Listener's status.
//
// Contract:
//   - watches Listeners (generation and labels), Services (its own, and
//     foreign ones holding a name a Listener waits for or a DNS name it
//     claims; and any that gives ports up, as Listeners waiting for ports
//     of a range do: portsfreed.go), ListenerClasses, listener pods (bound, ready, finished,
//     deleted), listener claims, pinned PersistentVolumes and Nodes (their
//     addresses);
//   - writes Services (create, server-side apply, delete of stale ones) and
//     its part of a Listener's status (the address fields and the Ready,
//     NodePortsKept, HostnamePublished and TenantMetadataAllowed
//     conditions), all under the operator's field manager
//     (v1alpha1.FieldManager), the status by server-side apply
//     (statuswrite.go), so that other writers' conditions stay;
//   - never writes pods, claims or Listeners' specs, never takes over a
//     Service it does not control (ForeignService), and leaves a foreign pod
//     selector to the takeover controller.
//
// A reconcile reads the cache, calls plain functions of values and ends in
// an outcome (outcome.go): the status to publish, its verdict, and when to
// look again. The address features of a class hook in here: DNS hostnames
// (hostname.go, hostnameconflict.go) and sticky node ports (nodeports.go).
// Load balancers: a Listener waiting for an address quotes what its load
// balancer said about the Service (lbwarning.go; the cache holds the
// Warning events about Services, and a new one wakes the Listener), and a
// Service whose
// loadBalancerClass must change is made again (lbclass.go).
package listener
