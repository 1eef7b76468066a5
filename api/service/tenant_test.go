package service

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestTenantMetadata: what a tenant writes (the Listener's labels, its
// overrides' metadata and ports) reaches the Service only through the
// class's allow-list — the shapes of issue 37, parts 1, 3 and 4.
func TestTenantMetadata(t *testing.T) {
	const head = `"apiVersion":"v1","kind":"Service","metadata":{"name":"web"`
	internalLB := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "internal-lb"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType:        v1alpha1.ServiceTypeLoadBalancer,
		ServiceAnnotations: map[string]string{"service.beta.kubernetes.io/do-loadbalancer-network": "INTERNAL"},
	}}
	locking := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "locking"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType:         v1alpha1.ServiceTypeClusterIP,
		LockedServiceFields: []string{"metadata.labels[pool]"},
	}}
	consenting := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "consenting"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		TenantMetadata: &v1alpha1.TenantMetadataPolicy{
			Labels:      []string{"team.example.com/*", "lbipam.cilium.io/*", "cost-center.example.com/id"},
			Annotations: []string{"docs.example.com/*"},
		},
	}}
	warn := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "migrating"}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType:    v1alpha1.ServiceTypeClusterIP,
		TenantMetadata: &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn},
	}}
	nodePort := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "external-unstable"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}}
	var manyPorts []string
	for i := 0; i < 150; i++ {
		manyPorts = append(manyPorts, fmt.Sprintf(`{"name":"p%d","port":%d}`, i, 10000+i))
	}
	tests := []struct {
		name      string
		class     *v1alpha1.ListenerClass
		labels    map[string]string
		override  []string
		refused   []string // fields, in order
		carried   Carried  // what the Service carries now
		leftOut   []string
		tolerated []string
		labelsOut map[string]string // the Service's labels besides the operator's three
		annsOut   map[string]string
		check     func(t *testing.T, svc *corev1.Service)
	}{
		{name: "part 1: exposure labels on the Listener do not reach the Service",
			class:     clusterInternal(),
			labels:    map[string]string{"service.kubernetes.io/service-proxy-name": "elsewhere", "lbipam.cilium.io/pool": "public", "app": "web"},
			leftOut:   []string{"metadata.labels[lbipam.cilium.io/pool]", "metadata.labels[service.kubernetes.io/service-proxy-name]"},
			labelsOut: map[string]string{"app": "web"}},
		{name: "part 1: a label the class locks does not reach the Service from the Listener",
			class:   locking,
			labels:  map[string]string{"pool": "public"},
			leftOut: []string{"metadata.labels[pool]"}},
		{name: "part 1: labels off the allow-list are left out, workload labels pass",
			class:     clusterInternal(),
			labels:    map[string]string{"team.example.com/owner": "a", "app.kubernetes.io/part-of": "shop", "helm.sh/chart": "web-1.0", "argocd.argoproj.io/instance": "shop"},
			leftOut:   []string{"metadata.labels[team.example.com/owner]"},
			labelsOut: map[string]string{"app.kubernetes.io/part-of": "shop", "helm.sh/chart": "web-1.0", "argocd.argoproj.io/instance": "shop"}},
		{name: "Stackable's Listener labels pass; the operator's own keys stay the operator's",
			class: clusterInternal(),
			labels: map[string]string{"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "simple-kafka", "app.kubernetes.io/component": "broker",
				"app.kubernetes.io/role-group": "default", "app.kubernetes.io/managed-by": "kafka.stackable.tech_kafkacluster", "app.kubernetes.io/version": "3.9.0-stackable0.0.0-dev", "stackable.tech/vendor": "Stackable"},
			labelsOut: map[string]string{"app.kubernetes.io/component": "broker", "app.kubernetes.io/role-group": "default", "app.kubernetes.io/version": "3.9.0-stackable0.0.0-dev", "stackable.tech/vendor": "Stackable"}},
		{name: "part 3: exposure annotations not on the built-in list are off the allow-list",
			class:    internalLB,
			override: []string{`{` + head + `,"annotations":{"service.beta.kubernetes.io/do-loadbalancer-network":"EXTERNAL","oci.oraclecloud.com/load-balancer-type":"nlb","service.beta.kubernetes.io/azure-pls-create":"true"}}}`},
			refused: []string{"spec.objectOverrides[0].metadata.annotations[oci.oraclecloud.com/load-balancer-type]", "spec.objectOverrides[0].metadata.annotations[service.beta.kubernetes.io/azure-pls-create]",
				"spec.objectOverrides[0].metadata.annotations[service.beta.kubernetes.io/do-loadbalancer-network]"},
			annsOut: map[string]string{"service.beta.kubernetes.io/do-loadbalancer-network": "INTERNAL"}},
		{name: "an override may not set the operator's labels",
			class:    clusterInternal(),
			override: []string{`{` + head + `,"labels":{"app.kubernetes.io/managed-by":"me"}}}`},
			refused:  []string{"spec.objectOverrides[0].metadata.labels[app.kubernetes.io/managed-by]"}},
		{name: "the class's patterns allow more, never exposure",
			class:     consenting,
			labels:    map[string]string{"team.example.com/owner": "a", "lbipam.cilium.io/pool": "public"},
			override:  []string{`{` + head + `,"labels":{"cost-center.example.com/id":"42","io.cilium/x":"y"},"annotations":{"docs.example.com/url":"https://docs"}}}`},
			refused:   []string{"spec.objectOverrides[0].metadata.labels[io.cilium/x]"},
			leftOut:   []string{"metadata.labels[lbipam.cilium.io/pool]"},
			labelsOut: map[string]string{"team.example.com/owner": "a", "cost-center.example.com/id": "42"},
			annsOut:   map[string]string{"docs.example.com/url": "https://docs"}},
		{name: "mode Warn keeps keys off the list that the Service carries, with a warning, but never exposure",
			class:     warn,
			carried:   Carried{Labels: map[string]string{"team.example.com/owner": ""}, Annotations: map[string]string{"team.example.com/note": ""}},
			labels:    map[string]string{"team.example.com/owner": "a", "service.kubernetes.io/headless": ""},
			override:  []string{`{` + head + `,"annotations":{"team.example.com/note":"n","metallb.io/address-pool":"public"}}}`},
			refused:   []string{"spec.objectOverrides[0].metadata.annotations[metallb.io/address-pool]"},
			leftOut:   []string{"metadata.labels[service.kubernetes.io/headless]"},
			tolerated: []string{"metadata.labels[team.example.com/owner]", "spec.objectOverrides[0].metadata.annotations[team.example.com/note]"},
			labelsOut: map[string]string{"team.example.com/owner": "a"},
			annsOut:   map[string]string{"team.example.com/note": "n"}},
		{name: "mode Warn adds no key off the list to a Service that does not carry it",
			class:    warn,
			carried:  Carried{Annotations: map[string]string{"team.example.com/note": ""}},
			labels:   map[string]string{"team.example.com/owner": "a"},
			override: []string{`{` + head + `,"annotations":{"team.example.com/new":"n"}}}`},
			leftOut:  []string{"metadata.labels[team.example.com/owner]", "spec.objectOverrides[0].metadata.annotations[team.example.com/new]"}},
		{name: "part 4: an override cannot add ports (150 node ports from a 1-port Listener)",
			class:    nodePort,
			override: []string{`{` + head + `},"spec":{"ports":[{"name":"http","port":80},` + strings.Join(manyPorts, ",") + `]}}`},
			refused:  []string{"spec.objectOverrides[0].spec.ports"},
			check:    wantPorts(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP})},
		{name: "an override cannot remove a port or change its number or protocol",
			class:    clusterInternal(),
			override: []string{`{` + head + `},"spec":{"ports":[]}}`, `{` + head + `},"spec":{"ports":[{"name":"http","port":8080,"protocol":"UDP"}]}}`},
			refused:  []string{"spec.objectOverrides[0].spec.ports", "spec.objectOverrides[1].spec.ports[0].port", "spec.objectOverrides[1].spec.ports[0].protocol"},
			check:    wantPorts(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP})},
		{name: "appProtocol and targetPort stay open",
			class:    clusterInternal(),
			override: []string{`{` + head + `},"spec":{"ports":[{"name":"http","appProtocol":"kubernetes.io/h2c","targetPort":"web"}]}}`},
			check:    wantPorts(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("kubernetes.io/h2c")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := listener(tt.override...)
			l.Labels = tt.labels
			res, err := Service(l, tt.class, tt.carried)
			if err != nil {
				t.Fatal(err)
			}
			if got := errFields(res.Refused); !reflect.DeepEqual(got, tt.refused) {
				t.Errorf("refused %q\nwant    %q\n%v", got, tt.refused, res.Refused)
			}
			if got := errFields(res.LeftOut); !reflect.DeepEqual(got, tt.leftOut) {
				t.Errorf("left out %q, want %q", got, tt.leftOut)
			}
			if got := errFields(res.Tolerated); !reflect.DeepEqual(got, tt.tolerated) {
				t.Errorf("tolerated %q, want %q", got, tt.tolerated)
			}
			for _, e := range append(append(res.Refused, res.LeftOut...), res.Tolerated...) {
				if !strings.Contains(e.Detail, tt.class.Name) {
					t.Errorf("%q does not name the class %q", e.Detail, tt.class.Name)
				}
			}
			svc := typed(t, res.Service)
			wantLabels := map[string]string{LabelName: LabelNameValue, LabelInstance: "web", LabelManagedBy: v1alpha1.FieldManager}
			for k, v := range tt.labelsOut {
				wantLabels[k] = v
			}
			if !reflect.DeepEqual(svc.Labels, wantLabels) {
				t.Errorf("Service labels %v\nwant %v", svc.Labels, wantLabels)
			}
			if len(svc.Annotations)+len(tt.annsOut) > 0 && !reflect.DeepEqual(svc.Annotations, tt.annsOut) {
				t.Errorf("Service annotations %v, want %v", svc.Annotations, tt.annsOut)
			}
			if tt.check != nil {
				tt.check(t, svc)
			}
		})
	}
}

// TestRefusalsSayHowToAllow: a key off the allow-list names the class and
// the field an administrator adds it to.
func TestRefusalsSayHowToAllow(t *testing.T) {
	res, err := Service(listener(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"lb.example.com/tier":"premium"}}}`), clusterInternal(), Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) != 1 {
		t.Fatalf("refused %v", res.Refused)
	}
	for _, want := range []string{"lb.example.com/tier", `ListenerClass "cluster-internal"`, "spec.tenantMetadata.annotations", "remove it"} {
		if !strings.Contains(res.Refused[0].Error(), want) {
			t.Errorf("%q does not say %q", res.Refused[0].Error(), want)
		}
	}
}

func errFields(errs []*field.Error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func wantPorts(want ...corev1.ServicePort) func(t *testing.T, svc *corev1.Service) {
	return func(t *testing.T, svc *corev1.Service) {
		t.Helper()
		if !reflect.DeepEqual(svc.Spec.Ports, want) {
			t.Errorf("ports %+v\nwant  %+v", svc.Spec.Ports, want)
		}
	}
}
