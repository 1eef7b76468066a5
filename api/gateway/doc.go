// Package gateway holds the rules of gateway classes (ListenerClass
// spec.gateway), as plain functions shared by the webhooks and the
// Listener reconciler: which Listener port goes through which Gateway
// listener (Bindings for TLSRoute classes, TCPSections for TCPRoute
// classes), the route the operator makes for it (Route, TCPRoute), what
// a Gateway listener must be (CheckSection, CheckTCPSection), which
// TCPRoute version to write (TCPRouteVersion), what a TCPRoute class
// publishes (GatewayAddress), and whether the route's parents accepted it
// (Attached, TCPAttached). docs/reconcile.md, "Gateway classes" and "TCP
// routes".
package gateway
