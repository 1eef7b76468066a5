package csi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestPodAddresses(t *testing.T) {
	node := func(addrs ...corev1.NodeAddress) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: addrs}}
	}
	both := node(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1.example"})
	class := func(st v1alpha1.ServiceType, pref v1alpha1.PreferredAddressType) *v1alpha1.ListenerClass {
		return &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: st, PreferredAddressType: pref}}
	}
	listener := func(st v1alpha1.ListenerStatus, ports ...string) *v1alpha1.Listener {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}, Status: st}
		for _, p := range ports {
			l.Spec.Ports = append(l.Spec.Ports, v1alpha1.ListenerPort{Name: p, Port: 1})
		}
		return l
	}
	np := map[string]int32{"http": 30080}
	lbIngress := []v1alpha1.ListenerIngress{{Address: "lb.example", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}}}
	tests := []struct {
		name     string
		listener *v1alpha1.Listener
		class    *v1alpha1.ListenerClass
		node     *corev1.Node
		want     string // first address; empty when an error is expected
		wantCode codes.Code
		wantMsg  string
	}{
		{"NodePort conservative picks the IP", listener(v1alpha1.ListenerStatus{NodePorts: np}, "http"), class(v1alpha1.ServiceTypeNodePort, v1alpha1.PreferredAddressHostnameConservative), both, "10.0.0.1", codes.OK, ""},
		{"NodePort hostname preference", listener(v1alpha1.ListenerStatus{NodePorts: np}, "http"), class(v1alpha1.ServiceTypeNodePort, v1alpha1.PreferredAddressHostname), both, "n1.example", codes.OK, ""},
		{"NodePort falls back to the other kind", listener(v1alpha1.ListenerStatus{NodePorts: np}, "http"), class(v1alpha1.ServiceTypeNodePort, v1alpha1.PreferredAddressHostname), node(corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}), "1.2.3.4", codes.OK, ""},
		{"NodePort node without addresses", listener(v1alpha1.ListenerStatus{NodePorts: np}, "http"), class(v1alpha1.ServiceTypeNodePort, ""), node(), "", codes.Unavailable, "waiting for node n1 to report an IP address or hostname"},
		{"NodePort without node ports yet", listener(v1alpha1.ListenerStatus{}, "http"), class(v1alpha1.ServiceTypeNodePort, ""), both, "", codes.Unavailable, "listener ns/l has no addresses yet: waiting for the node ports"},
		{"NodePort listener without ports", listener(v1alpha1.ListenerStatus{}), class(v1alpha1.ServiceTypeNodePort, ""), both, "10.0.0.1", codes.OK, ""},
		{"ClusterIP uses the listener's addresses", listener(v1alpha1.ListenerStatus{IngressAddresses: lbIngress}), class(v1alpha1.ServiceTypeClusterIP, ""), nil, "lb.example", codes.OK, ""},
		{"ClusterIP without addresses", listener(v1alpha1.ListenerStatus{}), class(v1alpha1.ServiceTypeClusterIP, ""), nil, "", codes.Unavailable, "waiting for the reconciler to publish status.ingressAddresses"},
		{"LoadBalancer without addresses", listener(v1alpha1.ListenerStatus{}), class(v1alpha1.ServiceTypeLoadBalancer, ""), nil, "", codes.Unavailable, "waiting for the load balancer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readyAddresses(tt.listener, tt.class, tt.node)
			if tt.wantCode != codes.OK {
				wantCode(t, err, tt.wantCode, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("podAddresses: %v", err)
			}
			if got[0].Address != tt.want {
				t.Errorf("first address %q, want %q", got[0].Address, tt.want)
			}
			if tt.class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort && (len(got) != 1 || len(got[0].Ports) != len(tt.listener.Status.NodePorts)) {
				t.Errorf("NodePort addresses %v: want exactly the pod's node with the node ports", got)
			}
		})
	}
}

func TestListenerOfClaim(t *testing.T) {
	claim := func(ann map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-0", Annotations: ann}}
	}
	got, err := listenerOfClaim(claim(map[string]string{v1alpha1.AnnotationListenerClass: "external"}), nil)
	if err != nil || got != (claims.Use{Listener: "data-0", Own: true, Class: "external"}) {
		t.Errorf("class claim: %+v, %v; want the per-claim listener data-0 of class external", got, err)
	}
	got, err = listenerOfClaim(claim(map[string]string{v1alpha1.AnnotationListenerName: "shared", v1alpha1.AnnotationListenerClass: "external"}), nil)
	if err != nil || got != (claims.Use{Listener: "shared"}) {
		t.Errorf("claim naming a listener: %+v, %v; want listener shared", got, err)
	}
	_, err = listenerOfClaim(claim(nil), nil)
	wantCode(t, err, codes.FailedPrecondition, "ns/data-0 has neither")
}

func TestSelectedNode(t *testing.T) {
	topo := func(node string) *csi.Topology {
		return &csi.Topology{Segments: map[string]string{v1alpha1.TopologyKeyHostname: node, "zone": "z"}}
	}
	for _, tt := range []struct {
		req  *csi.TopologyRequirement
		want string
	}{
		{&csi.TopologyRequirement{Preferred: []*csi.Topology{topo("b"), topo("a")}, Requisite: []*csi.Topology{topo("a"), topo("b")}}, "b"},
		{&csi.TopologyRequirement{Requisite: []*csi.Topology{topo("a")}}, "a"},
		{&csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{"zone": "z"}}}, Requisite: []*csi.Topology{topo("c")}}, "c"},
		{nil, ""},
	} {
		got, err := selectedNode(tt.req)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("selectedNode(%v) = %q, %v; want %q", tt.req, got, err, tt.want)
		}
	}
}

func TestAPIError(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{context.Background(), apierrors.NewNotFound(gr, "p"), codes.NotFound},
		{context.Background(), apierrors.NewServiceUnavailable("etcd is sad"), codes.Unavailable},
		{context.Background(), apierrors.NewForbidden(gr, "p", errors.New("no")), codes.PermissionDenied},
		{context.Background(), fmt.Errorf("wrapped: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{canceled, errors.New("client rate limiter: context canceled"), codes.Canceled},
	} {
		wantCode(t, apiError(tt.ctx, tt.err, codes.NotFound, "pod ns/p"), tt.want, "pod ns/p")
	}
}

// readyAddresses is podAddresses of a pod on node for listener of class
// once the volume may publish listener (addresses.Publishable): a shared
// Listener of a class, Ready for its generation; what the tests above
// vary is the addresses.
func readyAddresses(listener *v1alpha1.Listener, class *v1alpha1.ListenerClass, node *corev1.Node) ([]v1alpha1.ListenerIngress, error) {
	l := listener.DeepCopy()
	if l.Spec.ClassName == nil {
		l.Spec.ClassName = new("test")
	}
	meta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, ObservedGeneration: l.Generation})
	return podAddresses(addresses.PodVolume{Pod: &corev1.Pod{}, Listener: l, Class: class, Node: node})
}
