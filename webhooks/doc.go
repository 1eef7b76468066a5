// Package webhooks holds the listener-operator's admission webhooks.
//
// Mutating:
//   - StatefulSets labelled listeners.stackable.tech/enabled=true get a
//     "listener" volumeClaimTemplate and a read-only mount of it at
//     /stackable/listener in every container;
//   - pods that mount listener volumes get the Service selector label of each
//     Listener they belong to, required node affinity to the node a pinned
//     volume lives on, and the mount in containers that other webhooks added;
//     bare pods with the opt-in label get an ephemeral listener volume;
//   - listener claims get their ListenerClass (the default class) or their
//     storage class filled in.
//
// Validating: ListenerClasses, Listeners, listener claims and the pod
// templates of workloads, with the rules of api/validation. Pods are checked
// by the pod mutator itself (one webhook call per pod instead of two).
//
// What a claim is (a listener claim, which Listener it uses, whether it is
// the claim's own), which labels a pod gets, how a pod is pinned and what
// the injected claim templates hold are api/claims's answers, which the
// reconcilers, the CSI driver and node loss share.
//
// The files follow the admitted kinds. Each kind's handler reads the same
// way: decode the object once (and the stored one on UPDATE, at most once)
// into the kind's view, validate, mutate, respond (no patch when nothing
// changed):
//
//   - pod.go: pods (the walk over a pod's volumes; api/claims answers what
//     each volume is);
//   - statefulset.go: StatefulSets (the claim template, the pod template's
//     labels and mounts);
//   - workload.go: the pod templates and claim templates of workloads, and
//     the checks of a pod's listener volumes, which the pod handler runs on
//     its own view of the pod;
//   - claim.go: PersistentVolumeClaims; listener.go: Listeners;
//     listenerclass.go: ListenerClasses, with gatewayclass.go (the Gateways
//     a gateway class names, read live).
//
// Shared by several kinds: podtemplate.go (the views of a pod spec, which
// pods, StatefulSet pod templates and workload pod templates share, and
// the mounts), optin.go (the claim annotations an opted-in object gets),
// request.go (decoding, patch building, denials and the fail-open metric),
// podscan.go (the pod's decoder, which builds only its view), podgate.go
// (the readiness gate of classes with spec.podReadiness Gate, and the
// index of those classes),
// lookup.go and livereads.go (reads through the cache, live reads when it
// lacks an object), ordinaryclaims.go (the bounded memory of claims that
// are not listener claims, which the cache does not hold), gatewayports.go
// (pods and workloads whose own Listeners of a gateway class could not
// route their ports), webhooks.go (paths, RBAC, registration).
//
// Mutations are computed as JSON patch operations on exactly the fields they
// change, from small views of the request that decode only what the handlers
// read: fields this build does not know survive untouched. Nothing is written
// during admission (sideEffects: None), so dry runs are safe. Lookups go
// through the manager's cache and fall back to a live read when the cache does
// not have an object yet.
package webhooks
