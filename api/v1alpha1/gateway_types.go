package v1alpha1

// RouteKind is the Gateway API route kind a gateway class makes per
// Listener port. TLSRoute routes by TLS server name (SNI) and passes the
// connection through to the pod untouched; TCPRoute gives each port a
// Gateway listener (section) of its own, for protocols without TLS
// (docs/reconcile.md, "Gateway classes" and "TCP routes").
// +kubebuilder:validation:Enum=TLSRoute;TCPRoute
type RouteKind string

const (
	// RouteKindTLSRoute is gateway.networking.k8s.io/v1 TLSRoute.
	RouteKindTLSRoute RouteKind = "TLSRoute"
	// RouteKindTCPRoute is gateway.networking.k8s.io TCPRoute (v1 where
	// the cluster serves it, else v1alpha2).
	RouteKindTCPRoute RouteKind = "TCPRoute"
)

// ListenerGateway attaches every Listener of a class to listeners
// ("sections") of shared Gateways: the operator keeps a ClusterIP Service
// and one route per Listener port.
//
// TLSRoute: the route's hostname is the name the class's
// spec.hostname.template gives the Listener, published with the Gateway
// listener's port. A Listener port is routed through the section of its
// own name; with a single parentRef, a Listener's single port is routed
// through it whatever its name.
//
// TCPRoute: parentRefs is an ordered block of sections, one per port:
// replica i of a StatefulSet with n ports takes entries i×n to i×n+n-1,
// any other Listener the last free block. The Listener publishes the
// Gateway's address with each section's port.
type ListenerGateway struct {
	// ParentRefs are the Gateway listeners the routes attach to. For
	// TLSRoute each must be a TLS listener with tls.mode Passthrough that
	// admits TLSRoutes; for TCPRoute each is one section of the ordered
	// block, a listener of protocol TCP that admits TCPRoutes.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +required
	ParentRefs []GatewayParentRef `json:"parentRefs"`

	// RouteKind is the kind of route made per Listener port: TLSRoute
	// (by TLS server name) or TCPRoute (a section per port).
	// +kubebuilder:default=TLSRoute
	// +optional
	RouteKind RouteKind `json:"routeKind,omitempty"`
}

// GatewayParentRef names one listener of a Gateway.
type GatewayParentRef struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the Gateway (a class is cluster-wide, so it is always
	// named).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// SectionName is the name of the Gateway's listener. A Listener port
	// of this name is routed through it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	SectionName string `json:"sectionName"`
}

// EffectiveRouteKind is the class's route kind, TLSRoute when unset.
func (g *ListenerGateway) EffectiveRouteKind() RouteKind {
	if g == nil || g.RouteKind == "" {
		return RouteKindTLSRoute
	}
	return g.RouteKind
}

// Ready condition reasons of Listeners of a gateway class.
const (
	// ReasonGatewayAPIMissing: the Gateway API CRDs (Gateway, TLSRoute)
	// are not installed.
	ReasonGatewayAPIMissing = "GatewayAPIMissing"
	// ReasonGatewayNotFound: a Gateway the class names does not exist.
	ReasonGatewayNotFound = "GatewayNotFound"
	// ReasonGatewayListenerInvalid: the Gateway has no listener of the
	// section's name, or it is not TLS Passthrough admitting TLSRoutes.
	ReasonGatewayListenerInvalid = "GatewayListenerInvalid"
	// ReasonRouteNotAccepted: the Gateway's controller has not accepted the
	// Listener's route (yet); the message carries its reason.
	ReasonRouteNotAccepted = "RouteNotAccepted"
	// ReasonForeignRoute: a route of the name the operator uses exists and
	// is not this Listener's.
	ReasonForeignRoute = "ForeignRoute"
	// ReasonRouteRefused: the API server refused the Listener's route (an
	// admission policy, a quota, the operator's permissions); the message
	// carries its answer.
	ReasonRouteRefused = "RouteRefused"
	// ReasonGatewaySectionsExhausted: a TCPRoute class has too few
	// sections (parentRefs) for the Listener's block.
	ReasonGatewaySectionsExhausted = "GatewaySectionsExhausted"
	// ReasonGatewaySectionTaken: a section of the Listener's block is held
	// by a route that is not the Listener's own.
	ReasonGatewaySectionTaken = "GatewaySectionTaken"
	// ReasonGatewayAddressMissing: the Gateway a TCPRoute class's section
	// belongs to has no address in its status (yet).
	ReasonGatewayAddressMissing = "GatewayAddressMissing"
)

// LabelRouteListener on a route the operator made names its Listener
// (names.ListenerLabelValue: a name longer than a label value is
// shortened).
const LabelRouteListener = "listeners.stackable.tech/listener"

// RouteFieldManager is the field manager of the routes the operator
// applies (its own, so that a route's fields are told apart from the
// Service's in managedFields).
const RouteFieldManager = "listener-operator-route"
