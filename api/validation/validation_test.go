package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

var classes = NewClassNames("external-unstable", "cluster-internal", "external-stable")

// messages renders errs the way kubectl shows them, one per line.
func messages(errs field.ErrorList) string {
	var b []string
	for _, e := range errs {
		b = append(b, e.Error())
	}
	return strings.Join(b, "\n")
}

func check(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	if got := messages(errs); got != want {
		t.Errorf("errors:\n got: %s\nwant: %s", got, want)
	}
}

func TestClassNames(t *testing.T) {
	if got := classes.String(); got != "cluster-internal, external-stable, external-unstable" {
		t.Errorf("String() = %q", got)
	}
	if !classes.Has("external-stable") || classes.Has("external") {
		t.Errorf("Has is wrong for %v", classes)
	}
	if got := NewClassNames().String(); got != "none (create a ListenerClass first)" {
		t.Errorf("empty String() = %q", got)
	}
}

func TestListenerClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.ListenerClassSpec
		want string
	}{
		{"plain NodePort", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", PinnedNodePorts: ptr(true)}, ""},
		{"load balancer class on LoadBalancer", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerClass: ptr("example.com/lb")}, ""},
		{"bad load balancer class", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerClass: ptr("a b")},
			`spec.loadBalancerClass: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		// What the Stackable operator accepted and ignored is a warning, not an error.
		{"load balancer class on NodePort", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", LoadBalancerClass: ptr("example.com/lb")}, ""},
		{"pinned ClusterIP", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", PinnedNodePorts: ptr(true)}, ""},
		{"traffic policy on ClusterIP", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyLocal)}, ""},
		{"bad annotation", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceAnnotations: map[string]string{"no way/x/y": "1"}},
			`spec.serviceAnnotations: Invalid value: "no way/x/y": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{"harmless overrides", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Service","spec":{"type":"NodePort","externalTrafficPolicy":"Local"}}`)}}, ""},
		{"overrides change type and selector", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"spec":{"type":"LoadBalancer","selector":{"app":"x"}}}`)}},
			"spec.serviceOverrides.spec.type: Forbidden: would change the Service type from NodePort to LoadBalancer behind the operator's back; set spec.serviceType: LoadBalancer instead\n" +
				"spec.serviceOverrides.spec.selector: Forbidden: the operator selects the pods that mount the Listener's volume; remove spec.selector (a Listener's spec.extraPodSelectorLabels narrows the selection)"},
		{"overrides of identity", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","namespace":"y"}}`)}},
			"spec.serviceOverrides.apiVersion: Invalid value: \"apps/v1\": overrides apply to a v1 Service; remove apiVersion or set it to \"v1\"\n" +
				"spec.serviceOverrides.kind: Invalid value: \"Deployment\": overrides apply to a Service; remove kind or set it to \"Service\"\n" +
				"spec.serviceOverrides.metadata.name: Forbidden: the operator names each Listener's Service; remove metadata.name\n" +
				"spec.serviceOverrides.metadata.namespace: Forbidden: a Service lives in its Listener's namespace; remove metadata.namespace"},
		{"overrides not an object", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`[1]`)}},
			`spec.serviceOverrides: Invalid value: "[1]": must be a JSON object, a partial object such as {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "..."}, "spec": {...}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ListenerClass(&v1alpha1.ListenerClass{Spec: tc.spec}), tc.want)
		})
	}
}

func TestListenerClassWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.ListenerClassSpec
		want []string
	}{
		{"NodePort with what applies to it", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", PinnedNodePorts: ptr(true), ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyLocal)}, nil},
		{"LoadBalancer with what applies to it", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerClass: ptr("example.com/lb"), ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyCluster)}, nil},
		{"pinned false on ClusterIP", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", PinnedNodePorts: ptr(false)}, nil},
		// A class stored by a Stackable operator before 25.11: the traffic
		// policy was defaulted on every class.
		{"Stackable 25.7 cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyLocal)},
			[]string{`spec.serviceExternalTrafficPolicy: "Local" is ignored: it only applies to NodePort and LoadBalancer services; remove it or change serviceType`}},
		{"everything ignored", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", LoadBalancerClass: ptr("example.com/lb"), PinnedNodePorts: ptr(true), ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyCluster)},
			[]string{
				`spec.loadBalancerClass: "example.com/lb" is ignored: it only applies to serviceType LoadBalancer, not ClusterIP; remove it or set serviceType: LoadBalancer`,
				`spec.pinnedNodePorts: true is ignored: only NodePort addresses depend on the node, so pinning needs serviceType NodePort, not ClusterIP; set pinnedNodePorts: false or serviceType: NodePort`,
				`spec.serviceExternalTrafficPolicy: "Cluster" is ignored: it only applies to NodePort and LoadBalancer services; remove it or change serviceType`,
			}},
		{"loadBalancerClass on NodePort", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", LoadBalancerClass: ptr("example.com/lb")},
			[]string{`spec.loadBalancerClass: "example.com/lb" is ignored: it only applies to serviceType LoadBalancer, not NodePort; remove it or set serviceType: LoadBalancer`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ListenerClassWarnings(&v1alpha1.ListenerClass{Spec: tc.spec})
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestListener(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.ListenerSpec
		want string
	}{
		{"valid", v1alpha1.ListenerSpec{ClassName: ptr("external-stable"), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: "UDP"}, {Name: "dns-tcp", Port: 53}}}, ""},
		{"no class is left to the reconciler", v1alpha1.ListenerSpec{}, ""},
		{"unknown class", v1alpha1.ListenerSpec{ClassName: ptr("foo")},
			`spec.className: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`},
		{"empty class", v1alpha1.ListenerSpec{ClassName: ptr("")},
			`spec.className: Required value: name a ListenerClass, one of: cluster-internal, external-stable, external-unstable`},
		{"duplicate port name", v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}, {Name: "http", Port: 8080}}},
			`spec.ports[1].name: Invalid value: "http": spec.ports[0] already has this name; pods read ports by name, so rename one of them`},
		{"duplicate port number", v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}, {Name: "web", Port: 80, Protocol: "TCP"}}},
			`spec.ports[1].port: Invalid value: 80: spec.ports[0] ("http") already exposes 80/TCP and a Service cannot expose it twice; remove one or change its number`},
		{"bad port", v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "Http", Port: 0, Protocol: "ICMP"}}},
			"spec.ports[0].name: Invalid value: \"Http\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n" +
				"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive\n" +
				`spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`},
		{"reserved selector label", v1alpha1.ListenerSpec{ExtraPodSelectorLabels: map[string]string{"listener.stackable.tech/mnt.x": "true"}},
			`spec.extraPodSelectorLabels[listener.stackable.tech/mnt.x]: Invalid value: "listener.stackable.tech/mnt.x": labels starting with "listener.stackable.tech/mnt." are set by the operator on the pods of each Listener; pick another key`},
		{"bad selector label value", v1alpha1.ListenerSpec{ExtraPodSelectorLabels: map[string]string{"app": "a b"}},
			`spec.extraPodSelectorLabels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, Listener(&v1alpha1.Listener{Spec: tc.spec}, classes), tc.want)
		})
	}
}

// TestListenerStatefulSetPod: the pod a Listener's Service selects by name
// must be a label value (its Service could not be written otherwise).
func TestListenerStatefulSetPod(t *testing.T) {
	for _, tc := range []struct {
		name, pod, want string
	}{
		{"replica", "web-0", ""},
		{"empty", "", `metadata.annotations[listeners.stackable.tech/statefulset-pod]: Invalid value: "": name the StatefulSet pod that the Service selects by its statefulset.kubernetes.io/pod-name label, or remove the annotation to select pods by the operator's label`},
		{"not a label value", "web 0", `metadata.annotations[listeners.stackable.tech/statefulset-pod]: Invalid value: "web 0": name the StatefulSet pod that the Service selects by its statefulset.kubernetes.io/pod-name label, or remove the annotation to select pods by the operator's label`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &v1alpha1.Listener{}
			l.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: tc.pod}
			check(t, Listener(l, nil), tc.want)
		})
	}
}

func claimSpec(mutate func(*corev1.PersistentVolumeClaimSpec)) *corev1.PersistentVolumeClaimSpec {
	s := &corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr(v1alpha1.StorageClassName),
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestClaim(t *testing.T) {
	facts := ClaimFacts{Namespace: "ns", Classes: classes, Listeners: map[string]bool{"shared": true}}
	byClass := map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		spec        *corev1.PersistentVolumeClaimSpec
		want        string
	}{
		{"by class", byClass, claimSpec(nil), ""},
		{"by name", map[string]string{v1alpha1.AnnotationListenerName: "shared"}, claimSpec(nil), ""},
		{"both", map[string]string{v1alpha1.AnnotationListenerName: "shared", v1alpha1.AnnotationListenerClass: "external-stable"}, claimSpec(nil),
			`metadata.annotations[listeners.stackable.tech/listener-name]: Invalid value: "shared": set only one of listeners.stackable.tech/listener-class (a Listener for this claim) and listeners.stackable.tech/listener-name (an existing Listener shared by several claims)`},
		{"neither", nil, claimSpec(nil),
			`metadata.annotations[listeners.stackable.tech/listener-class]: Required value: a listener claim needs listeners.stackable.tech/listener-class (one of: cluster-internal, external-stable, external-unstable) or listeners.stackable.tech/listener-name (an existing Listener), and no default ListenerClass is set (annotate one with listeners.stackable.tech/is-default-class: "true")`},
		{"unknown class", map[string]string{v1alpha1.AnnotationListenerClass: "foo"}, claimSpec(nil),
			`metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`},
		{"empty class", map[string]string{v1alpha1.AnnotationListenerClass: ""}, claimSpec(nil),
			`metadata.annotations[listeners.stackable.tech/listener-class]: Required value: name a ListenerClass, one of: cluster-internal, external-stable, external-unstable`},
		// A Listener may come later in the same apply: MissingListener warns.
		{"listener not there yet", map[string]string{v1alpha1.AnnotationListenerName: "web"}, claimSpec(nil), ""},
		{"empty listener name", map[string]string{v1alpha1.AnnotationListenerName: ""}, claimSpec(nil),
			`metadata.annotations[listeners.stackable.tech/listener-name]: Required value: name a Listener in namespace ns`},
		{"other storage class", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = ptr("standard") }),
			`spec.storageClassName: Invalid value: "standard": listener claims use storageClassName "listeners.stackable.tech"; set it, or remove the listeners.stackable.tech/listener-class and listeners.stackable.tech/listener-name annotations`},
		{"no storage class", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = nil }),
			`spec.storageClassName: Invalid value: "<unset>": listener claims use storageClassName "listeners.stackable.tech"; set it, or remove the listeners.stackable.tech/listener-class and listeners.stackable.tech/listener-name annotations`},
		{"no access modes", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) { s.AccessModes = nil }),
			`spec.accessModes: Required value: set accessModes: [ReadWriteMany] (every pod of the claim reads the same addresses)`},
		{"block, cloned, selected", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) {
			s.VolumeMode = ptr(corev1.PersistentVolumeBlock)
			s.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "x"}
			s.Selector = &metav1.LabelSelector{}
			s.AccessModes = []corev1.PersistentVolumeAccessMode{"Sometimes"}
		}),
			"spec.accessModes[0]: Unsupported value: \"Sometimes\": supported values: \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadOnlyMany\", \"ReadWriteOncePod\"\n" +
				"spec.volumeMode: Unsupported value: \"Block\": supported values: \"Filesystem\"\n" +
				"spec.dataSourceRef: Forbidden: a listener volume holds addresses that the operator writes for the pod and cannot be cloned or restored; remove it\n" +
				"spec.selector: Forbidden: listener volumes are provisioned for each claim and never pre-exist; remove spec.selector"},
		{"too big", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) {
			s.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("10Gi")
		}),
			`spec.resources.requests.storage: Invalid value: "10Gi": a listener volume holds a few small files; request at most 1Gi ("1" is customary)`},
		{"1Gi is fine", byClass, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) {
			s.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Gi")
		}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, Claim(tc.annotations, tc.spec, facts, nil), tc.want)
		})
	}
}

func TestClaimDefaultClass(t *testing.T) {
	withDefault := func(c string) ClaimFacts { return ClaimFacts{Classes: classes, DefaultClass: c} }
	check(t, Claim(nil, claimSpec(nil), withDefault("cluster-internal"), nil), "")
	check(t, Claim(nil, claimSpec(nil), withDefault("nope"), nil),
		`metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "nope": ListenerClass "nope" not found; available: cluster-internal, external-stable, external-unstable`)
	check(t, Claim(map[string]string{v1alpha1.AnnotationListenerClass: "foo"}, claimSpec(nil), withDefault("cluster-internal"), nil),
		`metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`)
}

func TestClaimTemplatePaths(t *testing.T) {
	got := Claim(map[string]string{v1alpha1.AnnotationListenerClass: "foo"}, claimSpec(func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = ptr("x") }),
		ClaimFacts{Classes: classes}, field.NewPath("spec", "volumeClaimTemplates").Index(2))
	check(t, got, `spec.volumeClaimTemplates[2].metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`+"\n"+
		`spec.volumeClaimTemplates[2].spec.storageClassName: Invalid value: "x": listener claims use storageClassName "listeners.stackable.tech"; set it, or remove the listeners.stackable.tech/listener-class and listeners.stackable.tech/listener-name annotations`)
}

func TestVolumes(t *testing.T) {
	facts := ClaimFacts{Namespace: "ns", Classes: classes}
	vols := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "other-csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets.example.com"}}},
		{Name: "inline", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: v1alpha1.DriverName}}},
		{Name: "other-ephemeral", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			Spec: *claimSpec(func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = ptr("standard") })}}}},
		{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerName: "web"}},
			Spec:       *claimSpec(nil)}}}},
	}
	check(t, Volumes(vols, facts, field.NewPath("spec", "volumes")),
		`spec.volumes[2].csi.driver: Invalid value: "listeners.stackable.tech": inline CSI volumes of the listener driver are not supported; use a generic ephemeral volume instead: ephemeral: {volumeClaimTemplate: {metadata: {annotations: {listeners.stackable.tech/listener-class: <class>}}, spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}}}`)
}

func TestMissingListener(t *testing.T) {
	facts := ClaimFacts{Namespace: "ns", Classes: classes, Listeners: map[string]bool{"shared": true}}
	for ann, want := range map[string]string{
		"shared": "",
		"web":    `Listener "web" does not exist in namespace "ns" yet: pods that mount this volume wait in ContainerCreating until it is created`,
	} {
		if got := MissingListener(map[string]string{v1alpha1.AnnotationListenerName: ann}, facts); got != want {
			t.Errorf("MissingListener(%s) = %q, want %q", ann, got, want)
		}
	}
	if got := MissingListener(map[string]string{v1alpha1.AnnotationListenerClass: "x"}, facts); got != "" {
		t.Errorf("a claim by class: %q", got)
	}
}

func TestOptIn(t *testing.T) {
	path := field.NewPath("metadata", "annotations")
	withDefault := ClaimFacts{Namespace: "ns", Classes: classes, DefaultClass: "cluster-internal"}
	noDefault := ClaimFacts{Namespace: "ns", Classes: classes}
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		facts ClaimFacts
		want  string
	}{
		{"default class", nil, withDefault, ""},
		{"known class", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, noDefault, ""},
		{"shared listener, existing or not", map[string]string{v1alpha1.AnnotationListenerName: "later"}, noDefault, ""},
		{"unknown class", map[string]string{v1alpha1.AnnotationListenerClass: "does-not-exist"}, withDefault,
			`metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found; available: cluster-internal, external-stable, external-unstable`},
		{"no default", nil, noDefault,
			`metadata.annotations[listeners.stackable.tech/listener-class]: Required value: no default ListenerClass is set, so name one (available: cluster-internal, external-stable, external-unstable), or name a shared Listener with listeners.stackable.tech/listener-name`},
		{"empty class", map[string]string{v1alpha1.AnnotationListenerClass: ""}, withDefault,
			`metadata.annotations[listeners.stackable.tech/listener-class]: Required value: name a ListenerClass, one of: cluster-internal, external-stable, external-unstable`},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, OptIn(tc.ann, tc.facts, path), tc.want) })
	}
}

// TestListenerOverrides: the webhook's side of the one override rule
// (service.Service): what the Service that results may not differ in.
func TestListenerOverrides(t *testing.T) {
	internal := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-internal"},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			ServiceAnnotations:  map[string]string{"metallb.io/address-pool": "internal", "team": "a"},
			ServiceOverrides:    &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"policy.example.com/tier":"gold"}},"spec":{"sessionAffinity":"ClientIP"}}`)},
			LockedServiceFields: []string{"metadata.annotations[policy.example.com/tier]"}}}
	override := func(o string) *v1alpha1.Listener {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal"), ObjectOverrides: []runtime.RawExtension{{Raw: []byte(o)}}}}
	}
	const fix = `and is decided by ListenerClass "cluster-internal" (cluster policy), not by a Listener; remove it from the Listener's objectOverrides, or ask an administrator for a ListenerClass that sets it`
	for _, tc := range []struct {
		name     string
		class    *v1alpha1.ListenerClass
		override string
		want     string
	}{
		{"labels, annotations and open fields the class sets are the Listener's", internal,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"team":"a"},"annotations":{"team":"b"}},"spec":{"sessionAffinity":"None","internalTrafficPolicy":"Local","publishNotReadyAddresses":true}}`, ""},
		{"other kinds are not the class's business", internal, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"type":"x"}}`, ""},
		{"type", internal, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"LoadBalancer"}}`,
			`spec.objectOverrides[0].spec.type: Forbidden: spec.type is exposure (who can reach the pods, and on which address) ` + fix},
		{"exposure and locked", internal, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"metallb.io/address-pool":"public","policy.example.com/tier":"free"}},"spec":{"selector":{"a":"b"},"externalIPs":["203.0.113.10"]}}`,
			`spec.objectOverrides[0].metadata.annotations[metallb.io/address-pool]: Forbidden: metadata.annotations[metallb.io/address-pool] is an exposure annotation (it picks a load balancer's scheme, network or address pool) ` + fix + "\n" +
				`spec.objectOverrides[0].metadata.annotations[policy.example.com/tier]: Forbidden: metadata.annotations[policy.example.com/tier] is locked by the class (spec.lockedServiceFields) ` + fix + "\n" +
				`spec.objectOverrides[0].spec.externalIPs: Forbidden: spec.externalIPs is exposure (who can reach the pods, and on which address) ` + fix + "\n" +
				`spec.objectOverrides[0].spec.selector: Forbidden: spec.selector is exposure (who can reach the pods, and on which address) ` + fix},
		{"a case-folded key is refused with or without a class", nil, `{"apiVersion":"v1","kind":"Service","Metadata":5,"metadata":{"name":"web"}}`,
			`spec.objectOverrides[0].Metadata: Forbidden: unknown key (keys are case-sensitive); rename it to "metadata", or remove it if "metadata" is there already`},
		{"override without kind", nil, `{"metadata":{"name":"x"}}`,
			`spec.objectOverrides[0].kind: Required value: an override is matched to a generated object by apiVersion, kind, name and namespace; set apiVersion and kind (e.g. v1, Service)`},
		{"override not an object", internal, `"x"`,
			`spec.objectOverrides[0]: Invalid value: "\"x\"": must be a JSON object, a partial object such as {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "..."}, "spec": {...}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ListenerAgainstClass(override(tc.override), tc.class, service.Carried{})
			check(t, errs, tc.want)
		})
	}
}

func TestOptInExisting(t *testing.T) {
	check(t, field.ErrorList{OptInExisting("web", field.NewPath("metadata", "labels"))},
		"metadata.labels[listeners.stackable.tech/enabled]: Forbidden: StatefulSet \"web\" has no listener volume claim template, and claim templates cannot be added to an existing StatefulSet, so this label would do nothing; "+
			"to opt it in, run `kubectl delete statefulset web --cascade=orphan` and apply it again with the label: its pods keep running and are adopted by the new StatefulSet")
}
