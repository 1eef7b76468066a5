package service

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func listener(overrides ...string) *v1alpha1.Listener {
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec:       v1alpha1.ListenerSpec{ClassName: ptr.To("cluster-internal"), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}},
	}
	for _, o := range overrides {
		l.Spec.ObjectOverrides = append(l.Spec.ObjectOverrides, runtime.RawExtension{Raw: []byte(o)})
	}
	return l
}

func clusterInternal() *v1alpha1.ListenerClass {
	return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-internal"},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
}

func typed(t *testing.T, u *unstructured.Unstructured) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestService: what a Listener's overrides make of its class's Service, and
// what is refused — the statements of issue 20 cases 1, 2 and 6 among them.
func TestService(t *testing.T) {
	const head = `"apiVersion":"v1","kind":"Service","metadata":{"name":"web"}`
	lb := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType:         v1alpha1.ServiceTypeLoadBalancer,
		ServiceAnnotations:  map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "team": "a"},
		LockedServiceFields: []string{"spec.sessionAffinity", "metadata.annotations[policy.example.com/tier]"},
	}}
	tests := []struct {
		name     string
		class    *v1alpha1.ListenerClass
		override []string
		refused  []string // fields of the refusals, in order
		check    func(t *testing.T, svc *corev1.Service)
	}{
		{name: "case 1: a case-folded Metadata key with a type error is refused, the type stays",
			class:    clusterInternal(),
			override: []string{`{"apiVersion":"v1","kind":"Service","Metadata":5,"metadata":{"name":"web"},"spec":{"type":"NodePort"}}`, `{"apiVersion":"v1","kind":"Service","Metadata":null,"metadata":{"name":"web"}}`},
			refused:  []string{"spec.objectOverrides[0].Metadata", "spec.objectOverrides[1].Metadata"},
			check:    wantType(corev1.ServiceTypeClusterIP)},
		{name: "case 1: duplicate apiVersion (case-folded)",
			class:    clusterInternal(),
			override: []string{`{"apiVersion":"v1","apiversion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"NodePort"}}`},
			refused:  []string{"spec.objectOverrides[0].apiversion"},
			check:    wantType(corev1.ServiceTypeClusterIP)},
		{name: "case 1: exact duplicate key",
			class:    clusterInternal(),
			override: []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"ClusterIP","type":"NodePort"}}`},
			refused:  []string{"spec.objectOverrides[0].spec.type"},
			check:    wantType(corev1.ServiceTypeClusterIP)},
		{name: "case 1: Kelvin sign K next to kind",
			class:    clusterInternal(),
			override: []string{"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"\u212aind\":\"Service\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"type\":\"NodePort\"}}"},
			refused:  []string{"spec.objectOverrides[0].\u212aind"},
			check:    wantType(corev1.ServiceTypeClusterIP)},
		{name: "a type error deep in the spec is refused, never skipped",
			class:    clusterInternal(),
			override: []string{`{` + head + `,"spec":{"externalIPs":"203.0.113.10"}}`},
			refused:  []string{"spec.objectOverrides[0]"},
			check:    func(t *testing.T, svc *corev1.Service) { wantNoExternalIPs(t, svc) }},
		{name: "unknown top-level key",
			class:    clusterInternal(),
			override: []string{`{` + head + `,"status":{"loadBalancer":{}}}`},
			refused:  []string{"spec.objectOverrides[0].status"}},
		{name: "case 2: externalIPs are exposure",
			class:    clusterInternal(),
			override: []string{`{` + head + `,"spec":{"externalIPs":["203.0.113.10"]}}`},
			refused:  []string{"spec.objectOverrides[0].spec.externalIPs"},
			check:    func(t *testing.T, svc *corev1.Service) { wantNoExternalIPs(t, svc) }},
		{name: "case 2: every exposure field at once",
			class: clusterInternal(),
			override: []string{`{` + head + `,"spec":{"type":"LoadBalancer","loadBalancerIP":"203.0.113.1","loadBalancerSourceRanges":["0.0.0.0/0"],"healthCheckNodePort":30000,` +
				`"clusterIP":"None","externalName":"evil.example.com","externalTrafficPolicy":"Cluster","selector":{"app":"other"},"ipFamilyPolicy":"RequireDualStack",` +
				`"ports":[{"name":"http","port":80,"nodePort":30080}]}}`},
			refused: []string{"spec.objectOverrides[0].spec.clusterIP", "spec.objectOverrides[0].spec.externalName", "spec.objectOverrides[0].spec.externalTrafficPolicy",
				"spec.objectOverrides[0].spec.healthCheckNodePort", "spec.objectOverrides[0].spec.ipFamilyPolicy", "spec.objectOverrides[0].spec.loadBalancerIP",
				"spec.objectOverrides[0].spec.loadBalancerSourceRanges", "spec.objectOverrides[0].spec.ports[0].nodePort", "spec.objectOverrides[0].spec.selector", "spec.objectOverrides[0].spec.type"},
			check: func(t *testing.T, svc *corev1.Service) {
				wantType(corev1.ServiceTypeClusterIP)(t, svc)
				if svc.Spec.LoadBalancerIP != "" || svc.Spec.ClusterIP != "" || svc.Spec.ExternalName != "" || svc.Spec.Ports[0].NodePort != 0 || svc.Spec.Selector["app"] != "" || svc.Spec.IPFamilyPolicy != nil {
					t.Errorf("exposure left in the Service: %+v", svc.Spec)
				}
			}},
		{name: "case 2: exposure annotations and labels, added or removed",
			class: lb,
			override: []string{`{` + `"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"service.beta.kubernetes.io/aws-load-balancer-internal":null,"metallb.universe.tf/address-pool":"public",` +
				`"policy.example.com/tier":"gold","team":"b"},"labels":{"lbipam.cilium.io/pool":"public"}},"spec":{"sessionAffinity":"ClientIP","loadBalancerClass":"public"}}`},
			refused: []string{"spec.objectOverrides[0].metadata.annotations[metallb.universe.tf/address-pool]", "spec.objectOverrides[0].metadata.annotations[policy.example.com/tier]",
				"spec.objectOverrides[0].metadata.annotations[service.beta.kubernetes.io/aws-load-balancer-internal]", "spec.objectOverrides[0].metadata.labels[lbipam.cilium.io/pool]",
				"spec.objectOverrides[0].spec.loadBalancerClass", "spec.objectOverrides[0].spec.sessionAffinity"},
			check: func(t *testing.T, svc *corev1.Service) {
				want := map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "team": "b"}
				if !reflect.DeepEqual(svc.Annotations, want) {
					t.Errorf("annotations %v, want %v (the class's exposure annotation, the Listener's team)", svc.Annotations, want)
				}
				if _, ok := svc.Labels["lbipam.cilium.io/pool"]; ok || svc.Spec.SessionAffinity != "" || svc.Spec.LoadBalancerClass != nil {
					t.Errorf("locked fields changed: labels %v, spec %+v", svc.Labels, svc.Spec)
				}
			}},
		{name: "a DNS name in a shared zone is exposure: a tenant cannot claim one with external-dns",
			class:    clusterInternal(),
			override: []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"external-dns.alpha.kubernetes.io/hostname":"bank.example.com","external-dns.alpha.kubernetes.io/target":"203.0.113.9"}}}`},
			refused:  []string{"spec.objectOverrides[0].metadata.annotations[external-dns.alpha.kubernetes.io/hostname]", "spec.objectOverrides[0].metadata.annotations[external-dns.alpha.kubernetes.io/target]"},
			check: func(t *testing.T, svc *corev1.Service) {
				if len(svc.Annotations) != 0 {
					t.Errorf("annotations %v, want none (the class sets no hostname)", svc.Annotations)
				}
			}},
		{name: "case 6: Stackable's overrides case, the Listener wins what is not exposure",
			class: &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "overrides"}, Spec: v1alpha1.ListenerClassSpec{
				ServiceType:        v1alpha1.ServiceTypeClusterIP,
				ServiceAnnotations: map[string]string{"deprecated": "was here", "winner": "deprecated"},
				ServiceOverrides:   &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"serviceOverrides":"was here","winner":"serviceOverrides"}},"spec":{"sessionAffinity":"ClientIP"}}`)},
			}},
			override: []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop","annotations":{"listener":"was here","winner":"listener"}},"spec":{"internalTrafficPolicy":"Local"}}`},
			check: func(t *testing.T, svc *corev1.Service) {
				want := map[string]string{"deprecated": "was here", "serviceOverrides": "was here", "listener": "was here", "winner": "listener"}
				if !reflect.DeepEqual(svc.Annotations, want) {
					t.Errorf("annotations %v, want %v", svc.Annotations, want)
				}
				if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || ptr.Deref(svc.Spec.InternalTrafficPolicy, "") != corev1.ServiceInternalTrafficPolicyLocal {
					t.Errorf("spec %+v, want sessionAffinity ClientIP and internalTrafficPolicy Local", svc.Spec)
				}
			}},
		{name: "a node port in the class's serviceOverrides is not kept (the class webhook warns; docs/migration.md)",
			class: &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "pinned-by-override"}, Spec: v1alpha1.ListenerClassSpec{
				ServiceType:      v1alpha1.ServiceTypeNodePort,
				ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"spec":{"ports":[{"name":"http","port":80,"nodePort":30080,"appProtocol":"http"}]}}`)},
			}},
			check: func(t *testing.T, svc *corev1.Service) {
				if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != 0 || ptr.Deref(svc.Spec.Ports[0].AppProtocol, "") != "http" {
					t.Errorf("ports %+v, want http without a node port, with the override's appProtocol", svc.Spec.Ports)
				}
			}},
		{name: "an override of another object is decoded but does not apply",
			class:    clusterInternal(),
			override: []string{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"other"},"spec":{"externalIPs":["203.0.113.10"]}}`},
			check:    func(t *testing.T, svc *corev1.Service) { wantNoExternalIPs(t, svc) }},
		{name: "operator metadata: finalizers are refused",
			class:    clusterInternal(),
			override: []string{`{` + `"apiVersion":"v1","kind":"Service","metadata":{"name":"web","finalizers":["x/y"]}}`},
			refused:  []string{"spec.objectOverrides[0].metadata.finalizers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Service(listener(tt.override...), tt.class, Carried{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range res.Refused {
				got = append(got, e.Field)
				if !strings.Contains(e.Error(), "remove") {
					t.Errorf("refusal %q does not say how to fix it", e.Error())
				}
			}
			if !reflect.DeepEqual(got, tt.refused) {
				t.Errorf("refused %q\nwant    %q\n%v", got, tt.refused, res.Refused)
			}
			svc := typed(t, res.Service)
			if svc.Name != "web" || svc.Namespace != "shop" || len(svc.OwnerReferences) != 1 {
				t.Errorf("identity %s/%s owners %v", svc.Namespace, svc.Name, svc.OwnerReferences)
			}
			if tt.check != nil {
				tt.check(t, svc)
			}
			// The Service that results satisfies the class whatever was
			// refused: the same rule applied again refuses nothing.
			assertPolicy(t, tt.class, res)
		})
	}
}

func wantType(typ corev1.ServiceType) func(t *testing.T, svc *corev1.Service) {
	return func(t *testing.T, svc *corev1.Service) {
		t.Helper()
		if svc.Spec.Type != typ {
			t.Errorf("Service type %s, want %s", svc.Spec.Type, typ)
		}
	}
}

func wantNoExternalIPs(t *testing.T, svc *corev1.Service) {
	t.Helper()
	if len(svc.Spec.ExternalIPs) > 0 {
		t.Errorf("externalIPs %v reached the Service", svc.Spec.ExternalIPs)
	}
}

// assertPolicy: every exposure field and locked key of the result is what
// the class alone makes.
func assertPolicy(t *testing.T, class *v1alpha1.ListenerClass, res Result) {
	t.Helper()
	bare := listener()
	base, err := Service(bare, class, Carried{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := typed(t, res.Service), typed(t, base.Service)
	gs, ws := reflect.ValueOf(got.Spec), reflect.ValueOf(want.Spec)
	for i := 0; i < gs.NumField(); i++ {
		name := jsonName(gs.Type().Field(i))
		if SpecFields[name] != Exposure {
			continue
		}
		if name == "selector" {
			continue // the Listener's own selector does not depend on overrides
		}
		if !reflect.DeepEqual(gs.Field(i).Interface(), ws.Field(i).Interface()) {
			t.Errorf("exposure field spec.%s = %v, the class makes %v", name, gs.Field(i).Interface(), ws.Field(i).Interface())
		}
	}
	if !reflect.DeepEqual(got.Spec.Selector, want.Spec.Selector) {
		t.Errorf("selector %v, want %v", got.Spec.Selector, want.Spec.Selector)
	}
	for _, p := range got.Spec.Ports {
		if p.NodePort != 0 {
			t.Errorf("port %s has nodePort %d, which the class does not set", p.Name, p.NodePort)
		}
	}
	lk := lockedOf(class)
	for _, k := range append(append([]string{}, ExposureAnnotations...), sortedKeys(lk.annotations)...) {
		g, gok := got.Annotations[k]
		w, wok := want.Annotations[k]
		if g != w || gok != wok {
			t.Errorf("annotation %s = %q (%v), the class makes %q (%v)", k, g, gok, w, wok)
		}
	}
	for k := range got.Labels {
		if IsExposureLabel(k) || lk.labels[k] {
			if got.Labels[k] != want.Labels[k] {
				t.Errorf("label %s = %q, the class makes %q", k, got.Labels[k], want.Labels[k])
			}
		}
	}
	for k := range lk.spec {
		if g, w := fieldByJSON(got.Spec, k), fieldByJSON(want.Spec, k); !reflect.DeepEqual(g, w) {
			t.Errorf("locked spec.%s = %v, the class makes %v", k, g, w)
		}
	}
	if len(got.Finalizers) > 0 {
		t.Errorf("finalizers %v", got.Finalizers)
	}
}

func fieldByJSON(v any, name string) any {
	rv := reflect.ValueOf(v)
	for i := 0; i < rv.NumField(); i++ {
		if jsonName(rv.Type().Field(i)) == name {
			return rv.Field(i).Interface()
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestEveryServiceFieldIsClassified walks corev1.ServiceSpec and
// metav1.ObjectMeta of the vendored API: a field Kubernetes adds must be
// classified (exposure, operator or open) before it can reach a Service.
func TestEveryServiceFieldIsClassified(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		known map[string]Owner
	}{
		{reflect.TypeOf(corev1.ServiceSpec{}), SpecFields},
		{reflect.TypeOf(metav1.ObjectMeta{}), MetadataFields},
	} {
		seen := map[string]bool{}
		for i := 0; i < c.typ.NumField(); i++ {
			name := jsonName(c.typ.Field(i))
			seen[name] = true
			if _, ok := c.known[name]; !ok {
				t.Errorf("%s.%s is not classified: add it to overrides.%s as Exposure (it widens who can reach the pods or on which address), Operator or Open, and to the table in docs/webhooks.md",
					c.typ.Name(), name, map[bool]string{true: "SpecFields", false: "MetadataFields"}[c.typ == reflect.TypeOf(corev1.ServiceSpec{})])
			}
		}
		for name := range c.known {
			if !seen[name] {
				t.Errorf("%s has no field %q: remove it from the classification", c.typ.Name(), name)
			}
		}
	}
}

// TestDecode: the one strict decoder refuses every shape two decoders could
// read differently.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"}}`, ""},
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3}}`, ""},
		{`{"Kind":"Service"}`, `o.Kind: Forbidden: unknown key (keys are case-sensitive); rename it to "kind"`},
		{"{\"\u212aind\":\"Service\"}", `unknown key (keys are case-sensitive); rename it to "kind"`},
		{`{"kind":"Service","kind":"Service"}`, `o.kind: Duplicate value`},
		{`{"metadata":{"annotations":{"a":"1","a":"2"}}}`, `o.metadata.annotations.a: Duplicate value`},
		{`{"apiVersion":"v1","kind":"Service","spec":{"Type":"NodePort"}}`, `o.spec.Type: Forbidden: not a field of a v1 Service`},
		{`{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"nodePort":"x"}]}}`, `cannot unmarshal string`},
		{`{"metadata":5}`, `cannot unmarshal number`},
		{`[1]`, `must be a JSON object`},
		{`null`, `must be a JSON object`},
		{`{"data":{}}`, `o.data: Forbidden: unknown key; remove it (an override has only apiVersion, kind, metadata, spec)`},
		{sized(MaxOverrideBytes), ""},
		{sized(MaxOverrideBytes + 1), `o: Too long: may not be more than 32768 bytes`},
	} {
		_, errs := Decode([]byte(tc.raw), false, field.NewPath("o"))
		got := errs.ToAggregate()
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("Decode(%s) = %v, want no error", tc.raw, got)
		case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
			t.Errorf("Decode(%s) = %v, want %q", tc.raw, got, tc.want)
		}
	}
}

// sized is a valid Service override of exactly n bytes (an annotation
// value fills it).
func sized(n int) string {
	const head, tail = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"pad":"`, `"}}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// FuzzService: for any override the webhook admits (Service refuses nothing),
// the resulting Service satisfies the class's policy; for any override at
// all, what the reconciler applies does.
func FuzzService(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"a":"b"}},"spec":{"sessionAffinity":"ClientIP"}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"externalIPs":["1.2.3.4"]}}`,
		`{"apiVersion":"v1","kind":"Service","Metadata":5,"metadata":{"name":"web"},"spec":{"type":"NodePort"}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"io.cilium/x":"y"}},"spec":null}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"http","port":80,"nodePort":30000}]}}`,
	} {
		f.Add(s)
	}
	classes := []*v1alpha1.ListenerClass{clusterInternal(), {ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, ServiceAnnotations: map[string]string{"metallb.io/address-pool": "internal"},
		LockedServiceFields: []string{"spec.sessionAffinity", "metadata.labels[tier]"},
	}}}
	f.Fuzz(func(t *testing.T, o string) {
		for _, class := range classes {
			res, err := Service(listener(o), class, Carried{})
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(mustJSON(t, res.Service.Object)) {
				t.Fatal("invalid JSON")
			}
			assertPolicy(t, class, res)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
