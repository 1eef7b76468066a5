package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// FuzzTenantInputs: whatever a tenant writes (two objectOverrides, the
// Listener's labels, up to 8 declared ports), the Service that results
// satisfies the class: exposure is the class's, every metadata key that
// is not the class's own is one the allow-list (or, in mode Warn, any key
// but exposure and locked ones) lets a tenant set, and the ports are
// exactly the declared ones. The allow-list is restated here, apart from
// the code it checks.
func FuzzTenantInputs(f *testing.F) {
	for _, s := range [][3]string{
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"oci.oraclecloud.com/load-balancer-type":"nlb"}}}`, `{}`, `{"lbipam.cilium.io/pool":"public"}`},
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"p0","port":1},{"name":"x","port":2}]}}`, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":null}}`, `{"app":"x"}`},
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"team.example.com/a":"b","app.kubernetes.io/managed-by":"me"}}}`, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":null}}`, `{"app.kubernetes.io/name":"kafka","stackable.tech/vendor":"Stackable","service.kubernetes.io/headless":""}`},
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"p0","appProtocol":"h2c","targetPort":"web","nodePort":30001}]}}`, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"metallb.io/address-pool":"x","docs.example.com/u":"v"}}}`, `{"tier":"gold","team.example.com/x":"y"}`},
	} {
		f.Add(s[0], s[1], s[2], uint8(1))
	}
	f.Fuzz(func(t *testing.T, o1, o2, labelsJSON string, nports uint8) {
		var labels map[string]string
		if json.Unmarshal([]byte(labelsJSON), &labels) != nil {
			labels = nil
		}
		for _, class := range fuzzClasses() {
			carried := fuzzCarried(class)
			l := fuzzListener(int(nports%8)+1, labels, o1, o2)
			res, err := Service(l, class, carried)
			if err != nil {
				t.Fatal(err)
			}
			bare := fuzzListener(int(nports%8)+1, nil)
			base, err := Service(bare, class, carried)
			if err != nil {
				t.Fatal(err)
			}
			got, want := typed(t, res.Service), typed(t, base.Service)
			assertExposure(t, got, want)
			assertTenantKeys(t, class, carried, "labels", got.Labels, want.Labels)
			assertTenantKeys(t, class, carried, "annotations", got.Annotations, want.Annotations)
			assertDeclaredPorts(t, l, got)
		}
	})
}

func fuzzClasses() []*v1alpha1.ListenerClass {
	return []*v1alpha1.ListenerClass{
		clusterInternal(),
		{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1alpha1.ListenerClassSpec{
			ServiceType: v1alpha1.ServiceTypeLoadBalancer, ServiceAnnotations: map[string]string{"metallb.io/address-pool": "internal", "team": "a"},
			LockedServiceFields: []string{"spec.sessionAffinity", "metadata.labels[tier]", "metadata.annotations[team]"},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "consenting"}, Spec: v1alpha1.ListenerClassSpec{
			ServiceType: v1alpha1.ServiceTypeNodePort,
			TenantMetadata: &v1alpha1.TenantMetadataPolicy{Labels: []string{"team.example.com/*", "lbipam.cilium.io/*"},
				Annotations: []string{"docs.example.com/*", "metallb.io/address-pool"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "warn"}, Spec: v1alpha1.ListenerClassSpec{
			ServiceType: v1alpha1.ServiceTypeClusterIP, LockedServiceFields: []string{"metadata.labels[tier]"},
			ServiceAnnotations: map[string]string{"lb.example.com/network": "internal"},
			TenantMetadata:     &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn},
		}},
	}
}

// fuzzCarried is what the Service of a Listener of class carries already:
// for the class in mode Warn, some keys off the allow-list (and the one
// the class sets itself, which Warn must not hand to a tenant).
func fuzzCarried(class *v1alpha1.ListenerClass) Carried {
	if class.Spec.EffectiveTenantMetadataMode() != v1alpha1.TenantMetadataWarn {
		return Carried{}
	}
	return Carried{Labels: map[string]string{"team.example.com/a": "", "tier": ""},
		Annotations: map[string]string{"docs.example.com/u": "", "lb.example.com/network": ""}}
}

func fuzzListener(nports int, labels map[string]string, overrides ...string) *v1alpha1.Listener {
	l := listener(overrides...)
	l.Labels = labels
	l.Spec.Ports = nil
	for i := 0; i < nports; i++ {
		l.Spec.Ports = append(l.Spec.Ports, v1alpha1.ListenerPort{Name: fmt.Sprintf("p%d", i), Port: int32(1000 + i)})
	}
	return l
}

// assertExposure: every exposure field of the spec is what the class alone
// makes.
func assertExposure(t *testing.T, got, want *corev1.Service) {
	t.Helper()
	g, w := mustJSONMap(t, got.Spec), mustJSONMap(t, want.Spec)
	for key, owner := range SpecFields {
		if owner == Exposure && fmt.Sprint(g[key]) != fmt.Sprint(w[key]) {
			t.Errorf("exposure field spec.%s = %v, the class makes %v", key, g[key], w[key])
		}
	}
	if len(got.Finalizers) > 0 || len(got.OwnerReferences) != 1 || got.Name != "web" || got.Namespace != "shop" {
		t.Errorf("identity changed: %s/%s finalizers %v owners %v", got.Namespace, got.Name, got.Finalizers, got.OwnerReferences)
	}
}

// assertTenantKeys: a key whose value is not what the class alone makes
// is one a tenant may set: not the operator's label, not exposure, not
// locked, and unprefixed, a workload key, or matched by the class's
// patterns; in mode Warn also one the Service carries already, unless the
// class sets it itself.
func assertTenantKeys(t *testing.T, class *v1alpha1.ListenerClass, carried Carried, kind string, got, want map[string]string) {
	t.Helper()
	for k, v := range got {
		if w, ok := want[k]; ok && w == v {
			continue
		}
		if !tenantMaySet(class, carried, kind, k) {
			t.Errorf("metadata.%s[%s] = %q reached the Service of class %s (the class makes %q)", kind, k, v, class.Name, want[k])
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok && !tenantMaySet(class, carried, kind, k) {
			t.Errorf("metadata.%s[%s] = %q of class %s was removed", kind, k, w, class.Name)
		}
	}
}

func tenantMaySet(class *v1alpha1.ListenerClass, carried Carried, kind, key string) bool {
	lockedAs := map[string]string{"labels": "metadata.labels[" + key + "]", "annotations": "metadata.annotations[" + key + "]"}[kind]
	for _, f := range class.Spec.LockedServiceFields {
		if f == lockedAs {
			return false
		}
	}
	if kind == "labels" && (key == LabelName || key == LabelInstance || key == LabelManagedBy || IsExposureLabel(key)) ||
		kind == "annotations" && IsExposureAnnotation(key) {
		return false
	}
	if !strings.Contains(key, "/") {
		return true
	}
	_, isCarried := map[string]map[string]string{"labels": carried.Labels, "annotations": carried.Annotations}[kind][key]
	if class.Spec.EffectiveTenantMetadataMode() == v1alpha1.TenantMetadataWarn && isCarried {
		if _, own := class.Spec.ServiceAnnotations[key]; !own || kind != "annotations" {
			return true
		}
	}
	patterns := append([]string{}, WorkloadKeys...)
	if tm := class.Spec.TenantMetadata; tm != nil {
		patterns = append(patterns, map[string][]string{"labels": tm.Labels, "annotations": tm.Annotations}[kind]...)
	}
	for _, p := range patterns {
		if p == key || strings.HasSuffix(p, "/*") && strings.HasPrefix(key, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// assertDeclaredPorts: the Service's ports are the Listener's, by name,
// number and protocol, in order, with no node port.
func assertDeclaredPorts(t *testing.T, l *v1alpha1.Listener, svc *corev1.Service) {
	t.Helper()
	if len(svc.Spec.Ports) != len(l.Spec.Ports) {
		t.Fatalf("%d Service ports, %d declared", len(svc.Spec.Ports), len(l.Spec.Ports))
	}
	for i, p := range svc.Spec.Ports {
		d := l.Spec.Ports[i]
		if p.Name != d.Name || p.Port != d.Port || p.Protocol != corev1.ProtocolTCP || p.NodePort != 0 {
			t.Errorf("port %d = %+v, declared %+v", i, p, d)
		}
	}
}

func mustJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
