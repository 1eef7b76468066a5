// Package gateway holds the rules of gateway classes (ListenerClass
// spec.gateway), as plain functions shared by the webhooks and the
// Listener reconciler: which Listener port goes through which Gateway
// listener (Bindings), the TLSRoute the operator makes for it (Route),
// what a Gateway listener must be (CheckSection), and whether the route's
// parents accepted it (Attached). docs/reconcile.md, "Gateway classes".
package gateway
