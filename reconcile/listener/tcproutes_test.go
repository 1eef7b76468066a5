package listener

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
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

// TestSectionHolders: who holds each section of a TCPRoute class, read
// from every TCPRoute: the Listener's own routes of its ports, routes
// of others (a foreign one, one naming the whole Gateway, another
// Listener's made earlier) held against it, its own route of a port it
// dropped holding nothing, the route its predecessor of the same name
// left its own (only when it is the live Listener of that name).
func TestSectionHolders(t *testing.T) {
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "tcp"}, Spec: v1alpha1.ListenerClassSpec{Gateway: &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute}}}
	for _, s := range []string{"tcp-0", "tcp-1", "tcp-2", "tcp-3"} {
		class.Spec.Gateway.ParentRefs = append(class.Spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: s})
	}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "broker", UID: "uid-broker"}, Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092}}}}
	route := func(ns, name, owner string, uid types.UID, created int64, section string) *gwv1.TCPRoute {
		r := &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(created, 0))}}
		r.Spec.ParentRefs = []gwv1.ParentReference{{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "shared"}}
		if section != "" {
			r.Spec.ParentRefs[0].SectionName = ptr.To(gwv1.SectionName(section))
		}
		if owner != "" {
			r.Labels = map[string]string{gateway.LabelManagedBy: gateway.LabelManagedByValue}
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: owner, UID: uid, Controller: ptr.To(true)}}
		}
		return r
	}
	// judged writes the Gateway's Accepted condition for section (""
	// the whole Gateway) at the route's generation minus behind.
	judged := func(r *gwv1.TCPRoute, section string, status metav1.ConditionStatus, behind int64) *gwv1.TCPRoute {
		r.Generation = 2
		ref := gateway.ParentReference(v1alpha1.GatewayParentRef{Namespace: "gw", Name: "shared", SectionName: section})
		if section == "" {
			ref.SectionName = nil
		}
		r.Status.Parents = append(r.Status.Parents, gwv1.RouteParentStatus{ParentRef: ref, ControllerName: "traefik.io/gateway-controller",
			Conditions: []metav1.Condition{{Type: string(gwv1.RouteConditionAccepted), Status: status, Reason: "NotAllowedByListeners", ObservedGeneration: r.Generation - behind, LastTransitionTime: metav1.Now()}}})
		return r
	}
	for _, tc := range []struct {
		name   string
		routes []*gwv1.TCPRoute
		own    map[string]int
		held   map[int]bool
		// live is the Listener of l's name the API server has (nil: none).
		live *v1alpha1.Listener
	}{
		{"its own, and a later Listener's on the same section", []*gwv1.TCPRoute{
			route("kafka", "broker.kafka", "broker", "uid-broker", 10, "tcp-1"),
			route("kafka", "later.kafka", "later", "uid-later", 20, "tcp-1"),
		}, map[string]int{"kafka": 1}, map[int]bool{}, nil},
		{"an earlier Listener's on its section", []*gwv1.TCPRoute{
			route("kafka", "broker.kafka", "broker", "uid-broker", 10, "tcp-1"),
			route("other", "first.kafka", "first", "uid-first", 5, "tcp-1"),
		}, map[string]int{}, map[int]bool{1: true}, nil},
		{"a foreign route, a Listener of that name made before, l not the live one", []*gwv1.TCPRoute{
			route("tenant", "squatter", "", "", 1, "tcp-0"),
			route("kafka", "broker.kafka", "broker", "uid-old", 1, "tcp-2"),
		}, map[string]int{}, map[int]bool{0: true, 2: true}, nil},
		{"its predecessor's route (a Listener of its name deleted, l made since): its own", []*gwv1.TCPRoute{
			route("tenant", "squatter", "", "", 1, "tcp-0"),
			route("kafka", "broker.kafka", "broker", "uid-old", 1, "tcp-2"),
		}, map[string]int{"kafka": 2}, map[int]bool{0: true}, l},
		{"a later Listener's of its name (l read from a cache behind)", []*gwv1.TCPRoute{
			route("kafka", "broker.kafka", "broker", "uid-new", 1, "tcp-2"),
		}, map[string]int{}, map[int]bool{2: true}, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "broker", UID: "uid-new"}}},
		{"its route of a dropped port", []*gwv1.TCPRoute{
			route("kafka", "broker.plain", "broker", "uid-broker", 1, "tcp-3"),
		}, map[string]int{}, map[int]bool{}, nil},
		{"a route on the whole Gateway", []*gwv1.TCPRoute{
			route("tenant", "everything", "", "", 1, ""),
		}, map[string]int{}, map[int]bool{0: true, 1: true, 2: true, 3: true}, nil},
		{"a foreign route the Gateway refused there, one it has not judged", []*gwv1.TCPRoute{
			judged(route("tenant", "refused", "", "", 1, "tcp-0"), "tcp-0", metav1.ConditionFalse, 0),
			route("tenant", "unjudged", "", "", 1, "tcp-1"),
		}, map[string]int{}, map[int]bool{1: true}, nil},
		{"a refusal of an older generation, one of another section", []*gwv1.TCPRoute{
			judged(route("tenant", "stale", "", "", 1, "tcp-0"), "tcp-0", metav1.ConditionFalse, 1),
			judged(route("tenant", "elsewhere", "", "", 1, "tcp-2"), "tcp-3", metav1.ConditionFalse, 0),
		}, map[string]int{}, map[int]bool{0: true, 2: true}, nil},
		{"a Listener's route from a namespace the Gateway does not admit", []*gwv1.TCPRoute{
			judged(route("unadmitted", "broker.kafka", "broker", "uid-x", 1, "tcp-1"), "tcp-1", metav1.ConditionFalse, 0),
			judged(route("tenant", "everything", "", "", 1, ""), "", metav1.ConditionFalse, 0),
		}, map[string]int{}, map[int]bool{}, nil},
		{"an accepted route holds", []*gwv1.TCPRoute{
			judged(route("tenant", "accepted", "", "", 1, "tcp-3"), "tcp-3", metav1.ConditionTrue, 0),
		}, map[string]int{}, map[int]bool{3: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithIndex(&gwv1.TCPRoute{}, IndexTCPRouteSection, tcpRouteSections)
			for _, rt := range tc.routes {
				b = b.WithObjects(rt)
			}
			if tc.live != nil {
				b = b.WithObjects(tc.live.DeepCopy())
			}
			state := &gatewayAPIState{}
			state.watching.Store(true)
			v := gateway.TCPRouteV1
			state.tcpVersion.Store(&v)
			cl := b.Build()
			r := &listenerReconciler{client: cl, live: cl, gatewayAPI: state}
			own, held, err := r.sectionHolders(t.Context(), l, class)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(own, tc.own) || !reflect.DeepEqual(held, tc.held) {
				t.Errorf("own %v held %v, want %v %v", own, held, tc.own, tc.held)
			}
		})
	}
}
