// Package options holds what configures the leader's controllers (flags,
// defaults, the cluster domain and how it is found) and the timings they
// share.
package options

import (
	"flag"
	"fmt"
	"os"
	"time"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Preset names a set of ListenerClasses created at start-up.
type Preset string

// The presets --listener-class-preset accepts.
const (
	// PresetEphemeralNodes: cluster-internal (ClusterIP), external-unstable
	// (NodePort) and external-stable (LoadBalancer).
	PresetEphemeralNodes Preset = "ephemeral-nodes"
	// PresetStableNodes: as ephemeral-nodes, but external-stable is a NodePort
	// class whose volumes are pinned to their node.
	PresetStableNodes Preset = "stable-nodes"
	// PresetNone creates no classes.
	PresetNone Preset = "none"
)

// String implements flag.Value.
func (p *Preset) String() string { return string(*p) }

// Set implements flag.Value.
func (p *Preset) Set(s string) error {
	switch Preset(s) {
	case PresetEphemeralNodes, PresetStableNodes, PresetNone:
		*p = Preset(s)
		return nil
	}
	return fmt.Errorf("unknown preset %q: want %s, %s or %s", s, PresetEphemeralNodes, PresetStableNodes, PresetNone)
}

// Options configure the controllers.
type Options struct {
	// ClusterDomain is the DNS domain of the cluster, for the hostnames of
	// ClusterIP Listeners. Empty after BindFlags when neither the flag nor
	// KUBERNETES_CLUSTER_DOMAIN set it: ResolveClusterDomain then detects it.
	ClusterDomain string
	// ClusterDomainFromKubelet makes ResolveClusterDomain read the domain
	// from the kubelet's configuration (needs get on nodes/proxy).
	ClusterDomainFromKubelet bool
	// CreatePollInterval and CreateWaitDuration bound how the Listener
	// controller waits for a new Service's allocations (cluster IPs, node
	// ports) before publishing addresses derived from them.
	CreatePollInterval time.Duration
	CreateWaitDuration time.Duration
	// Preset is the set of ListenerClasses created at start-up.
	Preset Preset
	// MaxConcurrentReconciles is how many objects each controller
	// reconciles at once.
	MaxConcurrentReconciles int
	// PodRelabelInterval is how often the leader scans the cluster's pods
	// for ones that mount listener volumes but lack the listener-volume
	// label (admitted while the pod webhook was unavailable); it also
	// scans once when elected.
	PodRelabelInterval time.Duration
	// GatewayAPI lets gateway classes route Listeners: the leader watches
	// Gateways and TLSRoutes once their CRDs are installed. False (the
	// chart's gatewayAPI.enabled: false, which also leaves their RBAC out)
	// never watches them, and such Listeners say so.
	GatewayAPI bool
	// NodeLoss configures pinned-node loss recovery (reconcile/nodeloss).
	NodeLoss NodeLoss
	// Provision configures the volume provisioner (reconcile/provision).
	Provision Provision
	// Wrap, if set, wraps each controller's reconciler, given the
	// controller's name (cmd/ adds tracing this way, for every controller
	// at once).
	Wrap func(controller string, r crreconcile.Reconciler) crreconcile.Reconciler
}

// Wrapped applies Wrap, if set, to the reconciler of the named controller.
func (o Options) Wrapped(controller string, r crreconcile.Reconciler) crreconcile.Reconciler {
	if o.Wrap == nil {
		return r
	}
	return o.Wrap(controller, r)
}

// Default are the flags' defaults.
func Default() Options {
	domain := os.Getenv("KUBERNETES_CLUSTER_DOMAIN")
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return Options{
		ClusterDomain:           domain,
		CreatePollInterval:      time.Second,
		CreateWaitDuration:      20 * time.Second,
		Preset:                  PresetEphemeralNodes,
		MaxConcurrentReconciles: 8,
		PodRelabelInterval:      10 * time.Minute,
		GatewayAPI:              true,
		NodeLoss:                NodeLoss{Enabled: true, HandoverTimeout: 10 * time.Minute, MaxConcurrentReconciles: 2},
		Provision:               Provision{Enabled: true, MaxConcurrentReconciles: 4},
	}
}

// BindFlags registers the options as flags, with Default as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	*o = Default()
	// Unset, the domain is detected (ResolveClusterDomain).
	o.ClusterDomain = os.Getenv("KUBERNETES_CLUSTER_DOMAIN")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "DNS domain of the cluster, for ClusterIP Listener hostnames (env KUBERNETES_CLUSTER_DOMAIN; default: detected from the search list of /etc/resolv.conf, else cluster.local).")
	fs.BoolVar(&o.ClusterDomainFromKubelet, "cluster-domain-from-kubelet", o.ClusterDomainFromKubelet, "Unless --cluster-domain or KUBERNETES_CLUSTER_DOMAIN is set, read the cluster domain from the kubelet's configuration of the node in KUBERNETES_NODE_NAME, through the API server's node proxy (needs get on nodes/proxy).")
	fs.DurationVar(&o.CreatePollInterval, "k8s-create-poll-interval", o.CreatePollInterval, "How often to read a new Service back while waiting for its allocations.")
	fs.DurationVar(&o.CreateWaitDuration, "k8s-create-wait-duration", o.CreateWaitDuration, "How long to wait for a new Service's allocations before publishing what is there.")
	fs.Var(&o.Preset, "listener-class-preset", "ListenerClasses to create at start-up if missing: ephemeral-nodes, stable-nodes or none.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "How many objects each controller reconciles at once.")
	fs.BoolVar(&o.GatewayAPI, "gateway-api", o.GatewayAPI, "Route the Listeners of gateway classes (ListenerClass spec.gateway) through Gateway API Gateways, once their CRDs are installed; false never watches Gateways or TLSRoutes (needs no RBAC on them).")
	fs.DurationVar(&o.PodRelabelInterval, "pod-relabel-interval", o.PodRelabelInterval, "How often the leader pages through the cluster's pods for ones with listener volumes that the pod webhook did not label (it also does once when elected).")
	fs.BoolVar(&o.NodeLoss.Enabled, "pinned-node-recovery", o.NodeLoss.Enabled, "Detect listener volumes pinned to lost nodes and release them as their ListenerClass's pinnedNodeLoss says.")
	fs.DurationVar(&o.NodeLoss.HandoverTimeout, "handover-timeout", o.NodeLoss.HandoverTimeout, "How long a Listener handed over from a released claim waits for the claim to come back before it is deleted.")
	fs.BoolVar(&o.Provision.Enabled, "provision-volumes", o.Provision.Enabled,
		"Create the PersistentVolume of a listener claim as soon as it can be made (for a pinned class, once the scheduler picked a node), instead of waiting for csi-provisioner.")
}

// Validate says what is wrong with the options, if anything.
func (o Options) Validate() error {
	if o.ClusterDomain == "" {
		return fmt.Errorf("cluster domain must not be empty")
	}
	if o.CreatePollInterval <= 0 || o.CreateWaitDuration < 0 {
		return fmt.Errorf("k8s-create-poll-interval must be positive and k8s-create-wait-duration not negative")
	}
	if o.PodRelabelInterval <= 0 {
		return fmt.Errorf("pod-relabel-interval must be positive")
	}
	if o.NodeLoss.Enabled && o.NodeLoss.HandoverTimeout <= 0 {
		return fmt.Errorf("handover-timeout must be positive, got %s", o.NodeLoss.HandoverTimeout)
	}
	var p Preset
	if err := p.Set(string(o.Preset)); err != nil {
		return err
	}
	return nil
}

// NodeLoss configures pinned-node loss recovery.
type NodeLoss struct {
	// Enabled runs the controller. Off, nothing is detected or released
	// (and the class policy is ignored).
	Enabled bool
	// HandoverTimeout is how long a handed-over Listener waits for a claim
	// of its name (or a pod that will recreate it) before it is deleted.
	HandoverTimeout time.Duration
	// MaxConcurrentReconciles is how many claims are reconciled at once.
	MaxConcurrentReconciles int
}

// Provision configures the provisioner.
type Provision struct {
	// Enabled runs the controller. Off, csi-provisioner provisions every
	// listener volume (after the scheduler picked a node for its pod).
	Enabled bool
	// MaxConcurrentReconciles is how many claims are provisioned at once.
	MaxConcurrentReconciles int
}

// ConflictRetry is how soon a reconcile of the claim, pod or certificate
// controller that lost an optimistic-concurrency race looks again. (The
// Listener controller says when to look again in its outcome.)
const ConflictRetry = 50 * time.Millisecond
