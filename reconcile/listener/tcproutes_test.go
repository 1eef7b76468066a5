package listener

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestTCPRouteVersions: a v1alpha2 TCPRoute (a cluster that serves only
// v1alpha2) reads as the v1 route of the same content, and the objects the
// operator reads and lists are of the version it watches.
func TestTCPRouteVersions(t *testing.T) {
	ref := gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "shared", SectionName: ptr.To(gwv1.SectionName("tcp-0"))}
	backend := []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "broker-0", Port: ptr.To(gwv1.PortNumber(9092))}}}
	status := gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{ParentRef: ref, ControllerName: "traefik.io/gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 2}}}}}
	meta := metav1.ObjectMeta{Namespace: "kafka", Name: "broker-0.kafka", Generation: 2, Labels: map[string]string{"a": "b"}}
	old := &gwv1alpha2.TCPRoute{ObjectMeta: meta, Spec: gwv1alpha2.TCPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{ref}},
		Rules:           []gwv1alpha2.TCPRouteRule{{BackendRefs: backend}},
	}, Status: gwv1alpha2.TCPRouteStatus{RouteStatus: status}}
	want := &gwv1.TCPRoute{TypeMeta: metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1"}, ObjectMeta: meta, Spec: gwv1.TCPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{ref}},
		Rules:           []gwv1.TCPRouteRule{{BackendRefs: backend}},
	}, Status: gwv1.TCPRouteStatus{RouteStatus: status}}
	got, err := asTCPRoute(old)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v: %+v, want %+v", err, got, want)
	}
	items, err := tcpRouteItems(&gwv1alpha2.TCPRouteList{Items: []gwv1alpha2.TCPRoute{*old}})
	if err != nil || len(items) != 1 || !reflect.DeepEqual(items[0].Spec, want.Spec) {
		t.Errorf("%v: %+v", err, items)
	}
	if a := gateway.TCPAttached(got, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: "tcp-0"}); a.Attached || a.Reason != "" {
		t.Errorf("attached %+v, want not (no ResolvedRefs)", a)
	}
	for version, typ := range map[string]any{gateway.TCPRouteV1: &gwv1.TCPRoute{}, gateway.TCPRouteV1alpha2: &gwv1alpha2.TCPRoute{}} {
		if o := tcpRouteObject(version); reflect.TypeOf(o) != reflect.TypeOf(typ) {
			t.Errorf("%s: object %T", version, o)
		}
	}
	if _, ok := tcpRouteList(gateway.TCPRouteV1alpha2).(*gwv1alpha2.TCPRouteList); !ok {
		t.Error("v1alpha2 list of another type")
	}
}

// TestHoldsFirst: of two Listeners' routes on one section the earlier
// keeps it (by creation, then namespace and name); a route the operator
// did not make holds it against any.
func TestHoldsFirst(t *testing.T) {
	at := func(ns, name string, sec int, ours bool) gwv1.TCPRoute {
		r := gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0))}}
		if ours {
			r.Labels = map[string]string{gateway.LabelManagedBy: gateway.LabelManagedByValue}
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: name, Controller: ptr.To(true)}}
		}
		return r
	}
	mine := at("a", "x", 5, true)
	for _, tc := range []struct {
		name  string
		other gwv1.TCPRoute
		want  bool
	}{
		{"a later route of the operator's", at("a", "y", 6, true), true},
		{"an earlier one", at("a", "y", 4, true), false},
		{"as old, named after", at("a", "y", 5, true), true},
		{"as old, named before", at("a", "w", 5, true), false},
		{"a later route the operator did not make", at("a", "y", 6, false), false},
	} {
		if got := holdsFirst(&mine, []gwv1.TCPRoute{tc.other}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
