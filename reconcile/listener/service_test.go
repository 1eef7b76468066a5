package listener

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestDesiredService(t *testing.T) {
	base := func() *v1alpha1.Listener {
		return &v1alpha1.Listener{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
			Spec:       v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}},
		}
	}
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	tests := []struct {
		name    string
		edit    func(*v1alpha1.Listener)
		class   v1alpha1.ListenerClassSpec
		want    map[string]any // field path (dot-separated) → value; nil value = absent
		wantErr string
	}{
		{"ClusterIP has no LB or traffic policy fields", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP},
			map[string]any{"spec.type": "ClusterIP", "spec.loadBalancerClass": nil, "spec.allocateLoadBalancerNodePorts": nil, "spec.externalTrafficPolicy": nil, "spec.publishNotReadyAddresses": true}, ""},
		{"NodePort: traffic policy only when set", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort},
			map[string]any{"spec.type": "NodePort", "spec.externalTrafficPolicy": nil, "spec.allocateLoadBalancerNodePorts": nil}, ""},
		{"NodePort with traffic policy", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, ServiceExternalTrafficPolicy: ptr.To(v1alpha1.TrafficPolicyLocal)},
			map[string]any{"spec.externalTrafficPolicy": "Local"}, ""},
		{"LoadBalancer fields", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("lb"), LoadBalancerAllocateNodePorts: ptr.To(false)},
			map[string]any{"spec.loadBalancerClass": "lb", "spec.allocateLoadBalancerNodePorts": false, "spec.externalTrafficPolicy": nil}, ""},
		{"LoadBalancer defaults to allocating node ports", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer},
			map[string]any{"spec.allocateLoadBalancerNodePorts": true, "spec.loadBalancerClass": nil}, ""},
		{"publishNotReadyAddresses false is kept", func(l *v1alpha1.Listener) { l.Spec.PublishNotReadyAddresses = ptr.To(false) },
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP},
			map[string]any{"spec.publishNotReadyAddresses": false}, ""},
		{"overrides: listener beats class overrides beats annotations; null deletes", func(l *v1alpha1.Listener) {
			l.Spec.ObjectOverrides = []runtime.RawExtension{*raw(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop","annotations":{"winner":"listener","gone":null}}}`)}
		}, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			ServiceAnnotations: map[string]string{"winner": "annotations", "gone": "x", "a": "1"},
			ServiceOverrides:   raw(`{"metadata":{"annotations":{"winner":"class","c":"2"}}}`)},
			map[string]any{"metadata.annotations.winner": "listener", "metadata.annotations.gone": nil, "metadata.annotations.a": "1", "metadata.annotations.c": "2"}, ""},
		{"override in another namespace does not match", func(l *v1alpha1.Listener) {
			l.Spec.ObjectOverrides = []runtime.RawExtension{*raw(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"other","labels":{"x":"y"}}}`)}
		}, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP},
			map[string]any{"metadata.labels.x": nil}, ""},
		{"overrides cannot rename the Service or change its owner", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, ServiceOverrides: raw(`{"metadata":{"name":"evil","namespace":"kube-system","ownerReferences":null}}`)},
			map[string]any{"metadata.name": "web", "metadata.namespace": "shop"}, ""},
		{"malformed class override", nil,
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, ServiceOverrides: raw(`[1,2]`)},
			nil, "ListenerClass lc: spec.serviceOverrides"},
		{"malformed listener override is left out", func(l *v1alpha1.Listener) { l.Spec.ObjectOverrides = []runtime.RawExtension{*raw(`{`)} },
			v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP},
			map[string]any{"spec.type": "ClusterIP"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := base()
			if tt.edit != nil {
				tt.edit(l)
			}
			u, _, err := desiredService(l, &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "lc"}, Spec: tt.class}, "", nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.want {
				got, found, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
				if want == nil {
					if found {
						t.Errorf("%s = %v, want absent", path, got)
					}
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
			if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "uid-1" || !ptr.Deref(refs[0].Controller, false) {
				t.Errorf("owner references %+v, want the Listener as controller", refs)
			}
		})
	}
}

func TestServiceUpToDate(t *testing.T) {
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec:       v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}},
	}
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, ServiceAnnotations: map[string]string{"a": "1"}}}
	want, _, err := desiredService(l, class, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// What the API server returns: the applied fields plus defaults and
	// allocations.
	applied := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(want.Object, applied); err != nil {
		t.Fatal(err)
	}
	applied.TypeMeta = metav1.TypeMeta{}
	applied.Spec.ClusterIP, applied.Spec.ClusterIPs = "10.96.0.1", []string{"10.96.0.1"}
	applied.Spec.SessionAffinity = corev1.ServiceAffinityNone
	applied.Labels["added-by-someone"] = "x"

	tests := []struct {
		name string
		edit func(*corev1.Service)
		want bool
	}{
		{"as applied, with server defaults and others' labels", func(*corev1.Service) {}, true},
		{"someone changed a field we own", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, false},
		{"someone removed our label", func(s *corev1.Service) { delete(s.Labels, LabelManagedBy) }, false},
		{"a port too many", func(s *corev1.Service) { s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "x", Port: 1}) }, false},
		{"applied from an older desired state", func(s *corev1.Service) { s.Annotations[v1alpha1.AnnotationServiceHash] = "old" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := applied.DeepCopy()
			tt.edit(s)
			got, err := serviceUpToDate(s, want)
			if err != nil || got != tt.want {
				t.Errorf("serviceUpToDate = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestPodAndPinnedNodes(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	pod := func(node string, phase corev1.PodPhase, conds []corev1.PodCondition, deleting bool) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("b", corev1.PodRunning, ready, false),
		pod("a", corev1.PodRunning, notReady, false),
		pod("c", corev1.PodPending, nil, false),        // bound, not started: no Ready condition yet
		pod("", corev1.PodPending, nil, false),         // not scheduled
		pod("b", corev1.PodRunning, ready, false),      // a second pod on b
		pod("d", corev1.PodRunning, ready, true),       // being deleted, still ready
		pod("e", corev1.PodSucceeded, notReady, false), // finished
		pod("f", corev1.PodFailed, ready, false),       // finished (its last Ready stays)
	}
	for _, tc := range []struct {
		publishNotReady bool
		want            []string
	}{
		{false, []string{"b"}},
		{true, []string{"a", "b", "c", "d"}},
	} {
		if got := podNodes(pods, tc.publishNotReady); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("podNodes(publishNotReady=%v) = %v, want %v", tc.publishNotReady, got, tc.want)
		}
	}

	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"not-ours"}},
			{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}},
			{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-2"}},
		}},
	}}}}}
	if got, want := addresses.PinnedNodes(pv), []string{"node-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pinnedNodes = %v, want %v", got, want)
	}
	if got := addresses.PinnedNodes(&corev1.PersistentVolume{}); got != nil {
		t.Errorf("pinnedNodes of an unpinned volume = %v", got)
	}
}

// TestDesiredServiceSurvivesOddOverrides feeds overrides of the wrong shapes:
// each yields an error or a Service still named and owned as it must be,
// never a panic.
func TestDesiredServiceSurvivesOddOverrides(t *testing.T) {
	for _, o := range []string{
		`{"metadata":5}`,
		`{"metadata":null}`,
		`{"spec":null}`,
		`{"spec":{"ports":"x","selector":[1]}}`,
		`{"metadata":{"ownerReferences":"x","labels":"y","annotations":7}}`,
		`{"apiVersion":5,"kind":null}`,
		`null`,
		`"text"`,
	} {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
		class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, ServiceOverrides: &runtime.RawExtension{Raw: []byte(o)}}}
		u, _, err := desiredService(l, class, "", nil)
		if err != nil {
			continue
		}
		if u.GetName() != "web" || u.GetNamespace() != "shop" || len(u.GetOwnerReferences()) != 1 || u.GetKind() != "Service" {
			t.Errorf("override %s: service %s/%s kind %q owners %v", o, u.GetNamespace(), u.GetName(), u.GetKind(), u.GetOwnerReferences())
		}
		if _, err := serviceUpToDate(&corev1.Service{}, u); err != nil {
			t.Errorf("override %s: serviceUpToDate: %v", o, err)
		}
	}
}

func TestAllocated(t *testing.T) {
	svc := func(typ corev1.ServiceType, ips []string, nodePorts ...int32) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, ClusterIPs: ips}}
		for _, np := range nodePorts {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 80, NodePort: np})
		}
		return s
	}
	class := func(typ v1alpha1.ServiceType) *v1alpha1.ListenerClass {
		return &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: typ}}
	}
	noNodePorts := svc(corev1.ServiceTypeLoadBalancer, []string{"10.0.0.1"}, 0)
	noNodePorts.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
	tests := []struct {
		name  string
		svc   *corev1.Service
		class v1alpha1.ServiceType
		want  bool
	}{
		{"ClusterIP with an IP", svc(corev1.ServiceTypeClusterIP, []string{"10.0.0.1"}), v1alpha1.ServiceTypeClusterIP, true},
		{"ClusterIP without one yet", svc(corev1.ServiceTypeClusterIP, nil), v1alpha1.ServiceTypeClusterIP, false},
		{"NodePort with all node ports", svc(corev1.ServiceTypeNodePort, []string{"10.0.0.1"}, 30000, 30001), v1alpha1.ServiceTypeNodePort, true},
		{"NodePort missing a node port", svc(corev1.ServiceTypeNodePort, []string{"10.0.0.1"}, 30000, 0), v1alpha1.ServiceTypeNodePort, false},
		{"LoadBalancer allocating node ports, none yet", svc(corev1.ServiceTypeLoadBalancer, []string{"10.0.0.1"}, 0), v1alpha1.ServiceTypeLoadBalancer, false},
		{"LoadBalancer without node ports by choice", noNodePorts, v1alpha1.ServiceTypeLoadBalancer, true},
	}
	for _, tt := range tests {
		if got := allocated(tt.svc, class(tt.class)); got != tt.want {
			t.Errorf("%s: allocated = %v, want %v", tt.name, got, tt.want)
		}
	}
}
