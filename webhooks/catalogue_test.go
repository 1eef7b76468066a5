package webhooks

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/listener-operator/listener-operator/api/service"
)

// catalogueRow is one malformed or hostile request and what its sender
// gets. Rows with a path are posted straight to the webhook server (the API
// server never sends such requests); the others go through the API server
// with dry-run (the webhooks have no side effects, so they are called as
// for a real request). {ns} in objects is the test's namespace.
type catalogueRow struct {
	what string
	// setup: objects (of any kind, namespaced ones in {ns}) created for
	// real before the row, in order, and deleted after it (api rows); an
	// object of the same kind and name as the row's is updated.
	setup  []string
	before string // api: an object created first; object is then an update of it
	object string // api: the object; raw: the request body
	path   string // raw: the handler path
	// want is "denied: <text in the error>", "warning: <text>", "admitted",
	// "admitted, no warning" or "admitted: <text in the stored object>".
	want string
}

const (
	catClaim   = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"%s","namespace":"{ns}"%s},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}%s}}`
	catPod     = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"{ns}"%s},"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}]}]%s}}`
	catSts     = `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"%s","namespace":"{ns}"%s},"spec":{"serviceName":"s","selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}%s},"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}]}]%s}}%s}}`
	catDeploy  = `{"apiVersion":"apps/v1","kind":"%s","metadata":{"name":"%s","namespace":"{ns}"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"%s}%s},"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}]}],"restartPolicy":"%s"%s}}}}`
	catListen  = `{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"Listener","metadata":{"name":"%s","namespace":"{ns}"},"spec":%s}`
	catClass   = `{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"ListenerClass","metadata":{"name":"%s"},"spec":%s}`
	optedIn    = `,"labels":{"listeners.stackable.tech/enabled":"true"}`
	classAnn   = `,"annotations":{"listeners.stackable.tech/listener-class":"%s"}`
	listenAnn  = `,"annotations":{"listeners.stackable.tech/listener-name":"%s"}`
	ephemeralV = `,"volumes":[{"name":"l","ephemeral":{"volumeClaimTemplate":{"metadata":{"annotations":{"listeners.stackable.tech/listener-class":"%s"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}}}]`
	inlineCSI  = `,"volumes":[{"name":"l","csi":{"driver":"listeners.stackable.tech"}}]`
	foreignVol = `,"volumes":[{"name":"listener","configMap":{"name":"c"}}]`
	claimTmpl  = `,"volumeClaimTemplates":[{"metadata":{"name":"%s"%s},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}]`
)

func f(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// noPorts drops the container port of a catalogue object.
func noPorts(o string) string {
	return strings.Replace(o, `,"ports":[{"containerPort":8080}]`, "", 1)
}

// cronJob is a CronJob whose pod template has these volumes.
func cronJob(name, vols string) string {
	return f(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s","namespace":"{ns}"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}]}],"restartPolicy":"Never"%s}}}}}}`, name, vols)
}

func deploy(kind, name, labels, ann, vols string) string {
	restart := "Always"
	o := f(catDeploy, kind, name, labels, ann, restart, vols)
	if kind == "Job" { // a Job's selector is generated
		o = strings.Replace(strings.Replace(o, `"selector":{"matchLabels":{"app":"d"}},`, "", 1), `"restartPolicy":"Always"`, `"restartPolicy":"Never"`, 1)
		o = strings.Replace(o, `"apiVersion":"apps/v1"`, `"apiVersion":"batch/v1"`, 1)
	}
	return o
}

func review(kind, group, version, op, object, old string) string {
	return string(reviewSeed(group, version, kind, strings.ToLower(kind)+"s", admissionv1.Operation(op), "{ns}", object, old))
}

// warnLB is a LoadBalancer class in tenant mode Warn whose own
// annotations make an internal load balancer (DigitalOcean, Hetzner, OCI)
// and set lb.example.com/tier, a key off the tenant allow-list.
func warnLB(name string) string {
	return f(catClass, name, `{"serviceType":"LoadBalancer","tenantMetadata":{"mode":"Warn"},"serviceAnnotations":{"service.beta.kubernetes.io/do-loadbalancer-network":"INTERNAL","load-balancer.hetzner.cloud/disable-public-network":"true","oci.oraclecloud.com/load-balancer-type":"lb","lb.example.com/tier":"internal"}}`)
}

// exposureKey is the refusal of an override's annotation key that is
// exposure, on a Listener of class cat-warn1.
func exposureKey(key string) string {
	return strings.ReplaceAll(`spec.objectOverrides[0].metadata.annotations[KEY]: Forbidden: metadata.annotations[KEY] is an exposure annotation (it picks a load balancer's scheme, network or address pool) and is decided by ListenerClass "cat-warn1" (cluster policy), not by a Listener; remove it from the Listener's objectOverrides, or ask an administrator for a ListenerClass that sets it`, "KEY", key)
}

// allowList is how a refusal or warning names the annotations a tenant may
// set: service.WorkloadKeys and the class's.
var allowList = "(unprefixed keys, " + strings.Join(service.WorkloadKeys, ", ") + ", and the class's spec.tenantMetadata.annotations)"

// gatewayClass is a gateway class routing ports tls and admin through
// Gateway gw-system/shared (which need not exist).
func gatewayClass(name string) string {
	return f(catClass, name, `{"serviceType":"ClusterIP","hostname":{"template":"{listener}.{namespace}.catgw.test"},"gateway":{"parentRefs":[{"name":"shared","namespace":"gw-system","sectionName":"tls"},{"name":"shared","namespace":"gw-system","sectionName":"admin"}]}}`)
}

// long70 is a Listener name of 70 characters, dotted so that each DNS
// label of its hostname stays under 63.
var long70 = strings.Repeat("a", 35) + "." + strings.Repeat("b", 34)

var long253 = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)

var catalogue = []catalogueRow{
	// Claims.
	{what: "claim of an unknown class", object: f(catClaim, "c1", f(classAnn, "does-not-exist"), ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found; available:`},
	{what: "claim of a non-ASCII class", object: f(catClaim, "c2", f(classAnn, "clüster-internal"), ""),
		want: `denied: ListenerClass "clüster-internal" not found`},
	{what: "claim with an empty class", object: f(catClaim, "c3", f(classAnn, ""), ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-class]: Required value: name a ListenerClass, one of:`},
	{what: "claim with both annotations", object: f(catClaim, "c4", `,"annotations":{"listeners.stackable.tech/listener-class":"cluster-internal","listeners.stackable.tech/listener-name":"web"}`, ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-name]: Invalid value: "web": set only one of listeners.stackable.tech/listener-class (a Listener for this claim) and listeners.stackable.tech/listener-name (an existing Listener shared by several claims)`},
	{what: "claim naming a Listener that comes later", object: f(catClaim, "c5", f(listenAnn, "later"), ""),
		want: `warning: Listener "later" does not exist in namespace "{ns}" yet: pods that mount this volume wait in ContainerCreating until it is created`},
	{what: "claim with an empty Listener name", object: f(catClaim, "c6", f(listenAnn, ""), ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-name]: Required value: name a Listener in namespace {ns}`},
	{what: "claim of a block volume", object: f(catClaim, "c7", f(classAnn, "cluster-internal"), `,"volumeMode":"Block"`),
		want: `denied: spec.volumeMode: Unsupported value: "Block": supported values: "Filesystem"`},
	{what: "claim asking for 2Gi", object: strings.Replace(f(catClaim, "c8", f(classAnn, "cluster-internal"), ""), `"storage":"1"`, `"storage":"2Gi"`, 1),
		want: `denied: spec.resources.requests.storage: Invalid value: "2Gi": a listener volume holds a few small files; request at most 1Gi ("1" is customary)`},
	{what: "claim cloned from another", object: f(catClaim, "c9", f(classAnn, "cluster-internal"), `,"dataSource":{"kind":"PersistentVolumeClaim","name":"x"}`),
		want: `denied: spec.dataSource: Forbidden: a listener volume holds addresses that the operator writes for the pod and cannot be cloned or restored; remove it`},
	{what: "claim with a selector", object: f(catClaim, "c10", f(classAnn, "cluster-internal"), `,"selector":{"matchLabels":{"a":"b"}}`),
		want: `denied: spec.selector: Forbidden: listener volumes are provisioned for each claim and never pre-exist; remove spec.selector`},
	{what: "claim by annotation of another storage class", object: strings.Replace(f(catClaim, "c11", f(classAnn, "cluster-internal"), ""), `"storageClassName":"listeners.stackable.tech"`, `"storageClassName":"standard"`, 1),
		want: `denied: spec.storageClassName: Invalid value: "standard": listener claims use storageClassName "listeners.stackable.tech"; set it, or remove the listeners.stackable.tech/listener-class and listeners.stackable.tech/listener-name annotations`},
	{what: "claim without access modes", object: strings.Replace(f(catClaim, "c12", f(classAnn, "cluster-internal"), ""), `"accessModes":["ReadWriteMany"],`, ``, 1),
		want: `denied: spec.accessModes: Required value`},
	{what: "claim with a 253-character name", object: f(catClaim, long253, f(classAnn, "cluster-internal"), ""),
		want: `admitted`},
	{what: "claim naming nothing (dry-run)", object: f(catClaim, "c13", "", ""),
		want: `admitted: "listeners.stackable.tech/listener-class":"cluster-internal"`},
	{what: "claim of another storage class, no annotation", object: strings.Replace(f(catClaim, "c14", "", ""), `"storageClassName":"listeners.stackable.tech"`, `"storageClassName":"standard"`, 1),
		want: `admitted`},
	{what: "bound claim re-pointed to another Listener (issue 20 case 4)", before: f(catClaim, "c19", f(listenAnn, "a"), `,"volumeName":"pv-c19"`),
		object: f(catClaim, "c19", f(listenAnn, "b"), `,"volumeName":"pv-c19"`),
		want:   `denied: metadata.annotations[listeners.stackable.tech/listener-name]: Forbidden: is immutable once the claim is bound (to volume pv-c19, provisioned for the Listener it named then); to use another Listener or class, delete the claim and create it again`},
	{what: "bound claim moved to another class", before: f(catClaim, "c17", f(classAnn, "cluster-internal"), `,"volumeName":"pv-c17"`),
		object: f(catClaim, "c17", f(classAnn, "external-stable"), `,"volumeName":"pv-c17"`),
		want:   `denied: metadata.annotations[listeners.stackable.tech/listener-class]: Forbidden: is immutable once the claim is bound`},
	{what: "unbound claim re-pointed", before: f(catClaim, "c18", f(listenAnn, "a"), ""),
		object: f(catClaim, "c18", f(listenAnn, "b"), ""),
		want:   `admitted`},
	{what: "claim update that only adds a finalizer (object being deleted would too)", before: f(catClaim, "c15", f(classAnn, "cluster-internal"), ""),
		object: strings.Replace(f(catClaim, "c15", f(classAnn, "cluster-internal"), ""), `"namespace":"{ns}"`, `"namespace":"{ns}","finalizers":["example.com/hold"]`, 1),
		want:   `admitted`},
	{what: "claim re-targeted to an unknown class", before: f(catClaim, "c16", f(classAnn, "cluster-internal"), ""), object: f(catClaim, "c16", f(classAnn, "gone"), ""),
		want: `denied: ListenerClass "gone" not found`},

	// Pods.
	{what: "opted-in bare pod of an unknown class", object: f(catPod, "p1", optedIn+f(classAnn, "does-not-exist"), ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found`},
	{what: "opted-in bare pod with a non-listener volume named listener", object: f(catPod, "p2", optedIn, foreignVol),
		want: `denied: spec.volumes[0].name: Invalid value: "listener": the listener volume is added under the name "listener", which this volume (not a listener volume) already uses; rename it, or make it a listener volume`},
	{what: "pod with an inline CSI volume of the driver", object: f(catPod, "p3", "", inlineCSI),
		want: `denied: spec.volumes[0].csi.driver: Invalid value: "listeners.stackable.tech": inline CSI volumes of the listener driver are not supported; use a generic ephemeral volume instead`},
	{what: "pod with an ephemeral volume of an unknown class", object: f(catPod, "p4", "", f(ephemeralV, "nope")),
		want: `denied: spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "nope": ListenerClass "nope" not found`},
	{what: "opted-in bare pod, default class", object: f(catPod, "p5", optedIn, ""),
		want: `admitted: "mountPath":"/stackable/listener"`},
	{what: "pod with a pinned class on an ephemeral volume", object: f(catPod, "p6", "", f(ephemeralV, "external-stable")),
		want: `warning: ListenerClass "external-stable" pins each volume to the node its pod first ran on`},
	{what: "pod with a 253-character label value (invalid for the API server)", object: f(catPod, "p7", `,"labels":{"x":"`+long253+`"}`, ""),
		want: `denied: ": must be no more than 63`}, // bytes since 1.34, characters on 1.33

	// StatefulSets.
	{what: "opted-in StatefulSet of an unknown class", object: f(catSts, "s1", optedIn+f(classAnn, "does-not-exist"), "", "", ""),
		want: `denied: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found`},
	{what: "opted-in StatefulSet with a non-listener volume named listener", object: f(catSts, "s2", optedIn, "", foreignVol, ""),
		want: `denied: spec.template.spec.volumes[0].name: Invalid value: "listener"`},
	{what: "opted-in StatefulSet with its own listener claim template under another name", object: f(catSts, "s3", optedIn, "", "", f(claimTmpl, "addr", f(classAnn, "cluster-internal"))),
		want: `admitted: "volumeMounts":[{"mountPath":"/stackable/listener","name":"addr","readOnly":true}]`},
	{what: "StatefulSet claim template naming a Listener that comes later", object: f(catSts, "s4", "", "", "", f(claimTmpl, "listener", f(listenAnn, "later"))),
		want: `warning: Listener "later" does not exist in namespace "{ns}" yet`},
	{what: "existing StatefulSet labelled to opt in", before: f(catSts, "s5", "", "", "", ""), object: f(catSts, "s5", optedIn, "", "", ""),
		want: "denied: metadata.labels[listeners.stackable.tech/enabled]: Forbidden: StatefulSet \"s5\" has no listener volume claim template, and claim templates cannot be added to an existing StatefulSet, so this label would do nothing; to opt it in, run `kubectl delete statefulset s5 --cascade=orphan` and apply it again with the label"},
	{what: "StatefulSet with only its pod template labelled", object: strings.Replace(f(catSts, "s6", "", "", "", ""), `"labels":{"app":"s"}}`, `"labels":{"app":"s","listeners.stackable.tech/enabled":"true"}}`, 1),
		want: `warning: only the pod template is labelled listeners.stackable.tech/enabled=true, so each pod gets an ephemeral listener volume`},
	{what: "StatefulSet claim template with both annotations", object: f(catSts, "s7", "", "", "", f(claimTmpl, "listener", `,"annotations":{"listeners.stackable.tech/listener-class":"cluster-internal","listeners.stackable.tech/listener-name":"web"}`)),
		want: `denied: spec.volumeClaimTemplates[0].metadata.annotations[listeners.stackable.tech/listener-name]: Invalid value: "web": set only one of`},

	// Deployments, Jobs, DaemonSets.
	{what: "Deployment whose pod template opts in with an unknown class", object: deploy("Deployment", "d1", `,"listeners.stackable.tech/enabled":"true"`, f(classAnn, "does-not-exist"), ""),
		want: `denied: spec.template.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found`},
	{what: "Job whose pod template opts in with an unknown class", object: deploy("Job", "j1", `,"listeners.stackable.tech/enabled":"true"`, f(classAnn, "does-not-exist"), ""),
		want: `denied: spec.template.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist"`},
	{what: "DaemonSet with an inline CSI volume of the driver", object: deploy("DaemonSet", "ds1", "", "", inlineCSI),
		want: `denied: spec.template.spec.volumes[0].csi.driver: Invalid value: "listeners.stackable.tech": inline CSI volumes`},
	{what: "Deployment with a pinned class on an ephemeral volume", object: deploy("Deployment", "d2", "", "", f(ephemeralV, "external-stable")),
		want: `warning: ListenerClass "external-stable" pins each volume to the node its pod first ran on, which keeps an address stable only for long-lived claims, but an ephemeral volume gets a new claim (and address) with every new pod of this Deployment`},
	{what: "Deployment whose pod template opts in, default class", object: deploy("Deployment", "d3", `,"listeners.stackable.tech/enabled":"true"`, "", ""),
		want: `admitted`},

	// Per-claim Listeners without ports (issue 20 case 5).
	{what: "pod with a listener volume of its own and no container port", object: noPorts(f(catPod, "np1", "", f(ephemeralV, "cluster-internal"))),
		want: `denied: spec.containers: Required value: listener volume "l" gets a Listener of its own whose ports are the containers' ports, and no container declares one, so its Service cannot be made and the pod would never start; declare the served ports on container "app" (or another)`},
	{what: "opted-in bare pod without container ports", object: noPorts(f(catPod, "np2", optedIn, "")),
		want: `denied: spec.containers: Required value: listener volume "listener" gets a Listener of its own`},
	{what: "pod without ports sharing a Listener", object: noPorts(f(catPod, "np3", "", `,"volumes":[{"name":"l","ephemeral":{"volumeClaimTemplate":{"metadata":{"annotations":{"listeners.stackable.tech/listener-name":"shared"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}}}]`)),
		want: `admitted`},
	{what: "Deployment without container ports, ephemeral listener volume", object: noPorts(deploy("Deployment", "np4", "", "", f(ephemeralV, "cluster-internal"))),
		want: `denied: spec.template.spec.containers: Required value: listener volume "l"`},
	{what: "ReplicaSet without container ports, opted-in template", object: noPorts(deploy("ReplicaSet", "np5", `,"listeners.stackable.tech/enabled":"true"`, "", "")),
		want: `denied: spec.template.spec.containers: Required value: listener volume "listener"`},
	{what: "CronJob without container ports, ephemeral listener volume", object: noPorts(cronJob("np6", f(ephemeralV, "cluster-internal"))),
		want: `denied: spec.jobTemplate.spec.template.spec.containers: Required value: listener volume "l"`},
	{what: "CronJob with an unknown class", object: cronJob("np7", f(ephemeralV, "does-not-exist")),
		want: `denied: spec.jobTemplate.spec.template.spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist"`},
	{what: "StatefulSet without container ports, listener claim template", object: noPorts(f(catSts, "np8", "", "", "", f(claimTmpl, "addr", f(classAnn, "cluster-internal")))),
		want: `denied: spec.template.spec.containers: Required value: listener volume "addr"`},

	// Listeners.
	{what: "Listener overriding its class's Service type", object: f(catListen, "l1", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l1"},"spec":{"type":"LoadBalancer"}}]}`),
		want: `denied: spec.objectOverrides[0].spec.type: Forbidden: spec.type is exposure (who can reach the pods, and on which address) and is decided by ListenerClass "cluster-internal" (cluster policy), not by a Listener; remove it from the Listener's objectOverrides, or ask an administrator for a ListenerClass that sets it`},
	{what: "Listener override with a case-folded Metadata key and a type error (issue 20 case 1)", object: f(catListen, "l7", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","Metadata":5,"metadata":{"name":"l7"},"spec":{"type":"NodePort"}},{"apiVersion":"v1","kind":"Service","Metadata":null,"metadata":{"name":"l7"}}]}`),
		want: `denied: spec.objectOverrides[0].Metadata: Forbidden: unknown key (keys are case-sensitive); rename it to "metadata"`},
	{what: "Listener override with a case-folded apiversion next to apiVersion", object: f(catListen, "l8", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","apiversion":"v1","kind":"Service","metadata":{"name":"l8"},"spec":{"type":"NodePort"}}]}`),
		want: `denied: spec.objectOverrides[0].apiversion: Forbidden: unknown key (keys are case-sensitive); rename it to "apiVersion"`},
	{what: "Listener override with a Kelvin-sign kind key", object: f(catListen, "l9", "{\"className\":\"cluster-internal\",\"objectOverrides\":[{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"\u212aind\":\"Service\",\"metadata\":{\"name\":\"l9\"},\"spec\":{\"type\":\"NodePort\"}}]}"),
		want: "denied: spec.objectOverrides[0].\u212aind: Forbidden: unknown key (keys are case-sensitive); rename it to \"kind\""},
	{what: "Listener override with a type error deep in the spec", object: f(catListen, "l10", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l10"},"spec":{"externalIPs":"203.0.113.10"}}]}`),
		want: `denied: spec.objectOverrides[0]: Invalid value`},
	{what: "Listener override with an unknown top-level key", object: f(catListen, "l11", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l11"},"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.10"}]}}}]}`),
		want: `denied: spec.objectOverrides[0].status: Forbidden: unknown key; remove it`},
	{what: "Listener override setting externalIPs (issue 20 case 2)", object: f(catListen, "l12", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l12"},"spec":{"externalIPs":["203.0.113.10"]}}]}`),
		want: `denied: spec.objectOverrides[0].spec.externalIPs: Forbidden: spec.externalIPs is exposure`},
	{what: "Listener override setting loadBalancerIP, source ranges, node ports", object: f(catListen, "l13", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l13"},"spec":{"loadBalancerIP":"203.0.113.10","loadBalancerSourceRanges":["0.0.0.0/0"],"healthCheckNodePort":30001,"ports":[{"name":"http","port":80,"nodePort":30080}]}}]}`),
		want: `denied: spec.objectOverrides[0].spec.healthCheckNodePort: Forbidden`},
	{what: "Listener override choosing a load-balancer pool by annotation", object: f(catListen, "l14", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l14","annotations":{"metallb.universe.tf/address-pool":"public"}}}]}`),
		want: `denied: spec.objectOverrides[0].metadata.annotations[metallb.universe.tf/address-pool]: Forbidden: metadata.annotations[metallb.universe.tf/address-pool] is an exposure annotation`},
	{what: "Listener override choosing a load-balancer pool by label", object: f(catListen, "l15", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l15","labels":{"lbipam.cilium.io/pool":"public"}}}]}`),
		want: `denied: spec.objectOverrides[0].metadata.labels[lbipam.cilium.io/pool]: Forbidden`},
	{what: "Listener override removing the class's spec with null", object: f(catListen, "l16", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l16"},"spec":null}]}`),
		want: `denied: spec.objectOverrides[0].spec.selector: Forbidden`},
	{what: "Listener override adding a finalizer to its Service", object: f(catListen, "l17", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l17","finalizers":["example.com/hold"]}}]}`),
		want: `denied: spec.objectOverrides[0].metadata.finalizers: Forbidden`},
	{what: "Listener with Stackable's overrides case (issue 20 case 6)", object: f(catListen, "l18", `{"className":"cluster-internal","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l18","namespace":"{ns}","annotations":{"listener":"was here","winner":"listener"}},"spec":{"internalTrafficPolicy":"Local","sessionAffinity":"ClientIP"}}]}`),
		want: `admitted`},
	{what: "Listener labelled with exposure labels (issue 37 part 1)", object: `{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"Listener","metadata":{"name":"l19","namespace":"{ns}","labels":{"service.kubernetes.io/service-proxy-name":"elsewhere"}},"spec":{"className":"cluster-internal","ports":[{"name":"http","port":80}]}}`,
		want: `warning: the Listener's label service.kubernetes.io/service-proxy-name does not reach its Service: it is an exposure label`},
	{what: "Listener override with an annotation off the allow-list (issue 37 part 3)", object: f(catListen, "l20", `{"className":"external-unstable","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l20","annotations":{"service.beta.kubernetes.io/azure-pls-create":"true"}}}]}`),
		want: `denied: spec.objectOverrides[0].metadata.annotations[service.beta.kubernetes.io/azure-pls-create]: Forbidden: metadata.annotations[service.beta.kubernetes.io/azure-pls-create] is not on the annotations ListenerClass "external-unstable" allows tenants to set`},
	{what: "Listener override adding ports (issue 37 part 4)", object: f(catListen, "l21", `{"className":"external-unstable","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l21"},"spec":{"ports":[{"name":"http","port":80},{"name":"more","port":81}]}}]}`),
		want: `denied: spec.objectOverrides[0].spec.ports: Forbidden: spec.ports of a Listener's Service are exactly the Listener's spec.ports (http), and the override adds 1 port(s) (more)`},
	{what: "Listener override setting the operator's label", object: f(catListen, "l22", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l22","labels":{"app.kubernetes.io/managed-by":"me"}}}]}`),
		want: `denied: spec.objectOverrides[0].metadata.labels[app.kubernetes.io/managed-by]: Forbidden: metadata.labels[app.kubernetes.io/managed-by] is set by the operator on every Listener's Service`},
	{what: "Listener overriding the selector", object: f(catListen, "l2", `{"className":"cluster-internal","objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"l2"},"spec":{"selector":{"app":"other"}}}]}`),
		want: `denied: spec.objectOverrides[0].spec.selector`},
	{what: "Listener with duplicate ports", object: f(catListen, "l3", `{"className":"cluster-internal","ports":[{"name":"http","port":80},{"name":"web","port":80}]}`),
		want: `denied: spec.ports[1].port: Invalid value: 80: spec.ports[0] ("http") already exposes 80/TCP and a Service cannot expose it twice; remove one or change its number`},
	{what: "Listener of an unknown class", object: f(catListen, "l4", `{"className":"nope"}`),
		want: `denied: spec.className: Invalid value: "nope": ListenerClass "nope" not found`},
	{what: "Listener with a 253-character name", object: f(catListen, long253, `{"className":"cluster-internal"}`),
		want: `warning: is not a DNS-1035 label, so the Listener's Service is named`},
	{what: "Listener with a non-ASCII selector label", object: f(catListen, "l5", `{"className":"cluster-internal","extraPodSelectorLabels":{"app":"wéb"}}`),
		want: `denied: spec.extraPodSelectorLabels: Invalid value: "wéb"`},
	{what: "Listener without a class", object: f(catListen, "l6", `{}`),
		want: `warning: spec.className is not set: the Listener gets no Service until it names a ListenerClass`},

	// ListenerClasses.
	{what: "ListenerClass with a loadBalancerClass on ClusterIP", object: f(catClass, "cat-lc1", `{"serviceType":"ClusterIP","loadBalancerClass":"example.com/lb"}`),
		want: `warning: spec.loadBalancerClass: "example.com/lb" is ignored: it only applies to serviceType LoadBalancer, not ClusterIP; remove it or set serviceType: LoadBalancer`}, // the Stackable operator accepted it: a warning (docs/migration.md)
	{what: "ListenerClass with a tenant pattern that is not one", object: f(catClass, "cat-lc5", `{"serviceType":"ClusterIP","tenantMetadata":{"labels":["team*"]}}`),
		want: `denied: spec.tenantMetadata.labels[0]: Invalid value: "team*": "*" is allowed only as "<prefix>/*"`},
	{what: "ListenerClass letting tenants set keys under an exposure prefix", object: f(catClass, "cat-lc6", `{"serviceType":"ClusterIP","tenantMetadata":{"labels":["lbipam.cilium.io/*"]}}`),
		want: `warning: spec.tenantMetadata.labels: "lbipam.cilium.io/*" matches exposure keys (lbipam.cilium.io/*), which stay the class's`},
	{what: "ListenerClass whose hostname template gives two Listeners one name (issue 37 part 5)", object: f(catClass, "cat-lc7", `{"serviceType":"ClusterIP","hostname":{"template":"{listener}-{namespace}.example.test"}}`),
		want: `denied: spec.hostname.template: Invalid value: "{listener}-{namespace}.example.test": {listener} and {namespace} share the DNS label`},
	{what: "ListenerClass whose overrides have a case-folded key", object: f(catClass, "cat-lc3", `{"serviceType":"NodePort","serviceOverrides":{"Spec":{"type":"LoadBalancer"}}}`),
		want: `denied: spec.serviceOverrides.Spec: Forbidden: unknown key (keys are case-sensitive); rename it to "spec"`},
	{what: "ListenerClass locking something that is not a Service field", object: f(catClass, "cat-lc4", `{"serviceType":"ClusterIP","lockedServiceFields":["spec.nope"]}`),
		want: `denied: spec.lockedServiceFields[0]: Invalid value: "spec.nope": write "spec.<field>"`},
	{what: "ListenerClass whose overrides change the type", object: f(catClass, "cat-lc2", `{"serviceType":"NodePort","serviceOverrides":{"spec":{"type":"LoadBalancer"}}}`),
		want: `denied: spec.serviceOverrides.spec.type: Forbidden: would change the Service type from NodePort to LoadBalancer behind the operator's back; set spec.serviceType: LoadBalancer instead`},
	{what: "ListenerClass whose node port share per namespace is 0", object: f(catClass, "cat-lc8", `{"serviceType":"NodePort","nodePortRange":{"from":31000,"to":31009,"perNamespace":0}}`),
		want: `denied: spec.nodePortRange.perNamespace: Invalid value: 0: spec.nodePortRange.perNamespace in body should be greater than or equal to 1`},
	{what: "ListenerClass whose node port share per namespace exceeds its range", object: f(catClass, "cat-lc9", `{"serviceType":"LoadBalancer","nodePortRange":{"from":31000,"to":31009,"perNamespace":11}}`),
		want: `denied: spec.nodePortRange.perNamespace: Invalid value: perNamespace must not exceed the number of ports of the range (to - from + 1): it is the most ports one namespace may hold of it`},
	{what: "ListenerClass whose node port share exceeds its range, past the schema (an older CRD)", path: PathValidateClass,
		object: review("ListenerClass", "listeners.stackable.tech", "v1alpha1", "CREATE", f(catClass, "cat-lc10", `{"serviceType":"NodePort","nodePortRange":{"from":31000,"to":31009,"perNamespace":11}}`), ""),
		want:   `denied: spec.nodePortRange.perNamespace: Invalid value: 11: write a number of ports between 1 and 10 (the size of range 31000-31009): it is the most ports one namespace may hold of the range; remove it for no bound`},

	// Where features meet (issue 48): the shapes answered at admission.
	{what: "Listener override picking the network of a Warn class's internal load balancer (issue 48 shape 1)", setup: []string{warnLB("cat-warn1")},
		object: f(catListen, "w1", `{"className":"cat-warn1","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"w1","annotations":{"service.beta.kubernetes.io/do-loadbalancer-network":"EXTERNAL","load-balancer.hetzner.cloud/disable-public-network":"false","oci.oraclecloud.com/load-balancer-type":"nlb"}}}]}`),
		want: `denied: Listener.listeners.stackable.tech "w1" is invalid: [` + exposureKey("load-balancer.hetzner.cloud/disable-public-network") + ", " +
			exposureKey("oci.oraclecloud.com/load-balancer-type") + ", " + exposureKey("service.beta.kubernetes.io/do-loadbalancer-network") + "]"},
	{what: "Listener override replacing a key off the allow-list that its Warn class sets", setup: []string{warnLB("cat-warn2")},
		object: f(catListen, "w2", `{"className":"cat-warn2","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"w2","annotations":{"lb.example.com/tier":"public"}}}]}`),
		want:   `warning: spec.objectOverrides[0].metadata.annotations[lb.example.com/tier]: metadata.annotations[lb.example.com/tier] of the objectOverrides does not reach the Service: it is set by ListenerClass "cat-warn2" itself (spec.serviceAnnotations or spec.serviceOverrides), and a key off the allow-list never replaces what the class sets, in any mode (the Listener is admitted: ListenerClass "cat-warn2" is in spec.tenantMetadata.mode: Warn); remove it from the Listener's objectOverrides`},
	{what: "new Listener's override adding a key off the allow-list in mode Warn", setup: []string{warnLB("cat-warn3")},
		object: f(catListen, "w3", `{"className":"cat-warn3","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"w3","annotations":{"lb.example.com/owner":"team-a"}}}]}`),
		want: `warning: spec.objectOverrides[0].metadata.annotations[lb.example.com/owner]: metadata.annotations[lb.example.com/owner] of the objectOverrides does not reach the Service: it is not on the annotations ListenerClass "cat-warn3" allows tenants to set ` + allowList +
			`, and the Service does not carry it: mode Warn keeps such a key only on a Service that carries it already, never adds one; an administrator allows it by adding the key, or a "<prefix>/*" pattern, to spec.tenantMetadata.annotations of the class (the Listener is admitted: ListenerClass "cat-warn3" is in spec.tenantMetadata.mode: Warn); remove it from the Listener's objectOverrides`},
	{what: "Listener override changing a key off the allow-list that its Service carries, in mode Warn", setup: []string{warnLB("cat-warn4"),
		f(catListen, "w4", `{"className":"cat-warn4","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"w4","annotations":{"lb.example.com/owner":"team-a"}}}]}`),
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"w4","namespace":"{ns}","annotations":{"lb.example.com/owner":"team-a"},"ownerReferences":[{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"Listener","name":"w4","uid":"{uid:w4}","controller":true}]},"spec":{"ports":[{"name":"http","port":80}]}}`},
		object: f(catListen, "w4", `{"className":"cat-warn4","ports":[{"name":"http","port":80}],"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"w4","annotations":{"lb.example.com/owner":"team-b"}}}]}`),
		want: `warning: spec.objectOverrides[0].metadata.annotations[lb.example.com/owner]: metadata.annotations[lb.example.com/owner] reaches the Service only because ListenerClass "cat-warn4" is in spec.tenantMetadata.mode: Warn; it is not on the annotations ListenerClass "cat-warn4" allows tenants to set ` + allowList +
			`; an administrator allows it by adding the key, or a "<prefix>/*" pattern, to spec.tenantMetadata.annotations of the class`},
	{what: "ListenerClass whose hostname template renders names another class's renders (issue 48 shape 3)", setup: []string{f(catClass, "cat-tpl-a", `{"serviceType":"ClusterIP","hostname":{"template":"{listener}.{namespace}.cat.test"}}`)},
		object: f(catClass, "cat-tpl-b", `{"serviceType":"ClusterIP","hostname":{"template":"{namespace}.{listener}.cat.test"}}`),
		want:   `warning: spec.hostname.template: ListenerClass "cat-tpl-a" (template "{listener}.{namespace}.cat.test") can give another Listener the same name: Listener "b" in namespace "c" of this class and Listener "c" in namespace "b" of ListenerClass "cat-tpl-a" both get "c.b.cat.test"; the operator publishes such a name for the first Listener that has it only, and reports HostnameConflict on the other (docs/reconcile.md, "Two Listeners, one name"); to keep the names apart, give the classes templates that cannot meet (e.g. under different zones)`},
	{what: "gateway class before the Gateway API is installed", object: gatewayClass("cat-gw0"),
		want: `denied: ListenerClass.listeners.stackable.tech "cat-gw0" is invalid: spec.gateway: Invalid value: "shared": the Gateway API (gateway.networking.k8s.io/v1 Gateway and TLSRoute) is not installed in this cluster, so no Listener of this class could be routed; install its CRDs and a Gateway controller first, or remove spec.gateway`},
	{what: "gateway Listener web-tls beside Listener web with port tls (issue 48 shape 4)", setup: []string{gatewayClass("cat-gw1"), f(catListen, "web", `{"className":"cat-gw1","ports":[{"name":"tls","port":9093},{"name":"admin","port":9094}]}`)},
		object: f(catListen, "web-tls", `{"className":"cat-gw1","ports":[{"name":"tls","port":9093}]}`),
		want:   `admitted, no warning`}, // its route is web-tls.tls; web's are web.tls and web.admin (names.RouteName)
	{what: "gateway Listener whose name is longer than a label value (issue 48 shape 5)", setup: []string{gatewayClass("cat-gw2")},
		object: f(catListen, long70, `{"className":"cat-gw2","ports":[{"name":"tls","port":9093}]}`),
		want:   `warning: the name "` + long70 + `" is not a DNS-1035 label, so the Listener's Service is named "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-063c8acce6"; a lower-case name starting with a letter, without dots, keeps them equal`}, // its routes' Listener label is shortened with a hash (names.ListenerLabelValue)
	{what: "pod mounting a standalone claim of a gateway class, with a port no section routes (issue 48 shape 6)", setup: []string{gatewayClass("cat-gw3"), f(catClaim, "broker", f(classAnn, "cat-gw3"), "")},
		object: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"broker","namespace":"{ns}"},"spec":{"containers":[{"name":"broker","image":"x","ports":[{"name":"tls","containerPort":9093},{"name":"metrics","containerPort":9404}]}],"volumes":[{"name":"listener","persistentVolumeClaim":{"claimName":"broker"}}]}}`,
		want:   `denied: Pod "broker" is invalid: spec.containers: Invalid value: "metrics": the container port "metrics" becomes a port of the Listener of claim "broker": ListenerClass cat-gw3 routes ports through the Gateway listeners (sections) "tls" (Gateway gw-system/shared), "admin" (Gateway gw-system/shared), and none is named "metrics", so this port cannot be routed; name each port after a section, or remove the port`},

	// Requests the API server never sends, posted to the webhook server.
	{what: "a Pod sent to the claim webhook", path: PathValidateClaim, object: review("Pod", "", "v1", "CREATE", f(catPod, "x", "", ""), ""),
		want: `denied: this webhook judges PersistentVolumeClaim, not "Pod"`},
	{what: "a Deployment sent to the StatefulSet webhook", path: PathMutateStatefulSet, object: review("Deployment", "apps", "v1", "CREATE", deploy("Deployment", "x", "", "", ""), ""),
		want: `denied: this webhook judges StatefulSet.apps, not "Deployment.apps"`},
	{what: "a body that is not JSON", path: PathMutatePod, object: `{"apiVersion":`,
		want: `denied: `},
	{what: "an AdmissionReview without a request", path: PathMutatePod, object: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		want: `denied: `},
	{what: "a claim whose spec is a number", path: PathValidateClaim, object: review("PersistentVolumeClaim", "", "v1", "CREATE", `{"metadata":{"name":"x"},"spec":5}`, ""),
		want: `denied: decode PersistentVolumeClaim`},
	{what: "a pod with null metadata and volumes", path: PathMutatePod, object: review("Pod", "", "v1", "CREATE", `{"metadata":null,"spec":{"volumes":null,"containers":null}}`, ""),
		want: `admitted`},
	{what: "a StatefulSet UPDATE without its old object", path: PathMutateStatefulSet, object: review("StatefulSet", "apps", "v1", "UPDATE", `{"metadata":{"name":"x","labels":{"listeners.stackable.tech/enabled":"true"}}}`, ""),
		want: `denied: decode StatefulSet`},
	{what: "a Listener whose ports are a string", path: PathValidateListener, object: review("Listener", "listeners.stackable.tech", "v1alpha1", "CREATE", `{"metadata":{"name":"x"},"spec":{"ports":"80"}}`, ""),
		want: `denied: decode Listener`},
}
