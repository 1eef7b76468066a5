package reconcile

import "github.com/listener-operator/listener-operator/reconcile/options"

// The controllers' options live in reconcile/options, where every
// controller package reads them; these names keep cmd/ and the tests
// calling the wiring package alone.
type (
	// Options configure the controllers (options.Options).
	Options = options.Options
	// Preset names a set of ListenerClasses created at start-up.
	Preset = options.Preset
	// ClusterDomainSources are where Options.ResolveClusterDomain looks.
	ClusterDomainSources = options.ClusterDomainSources
)

// The presets --listener-class-preset accepts.
const (
	PresetEphemeralNodes = options.PresetEphemeralNodes
	PresetStableNodes    = options.PresetStableNodes
	PresetNone           = options.PresetNone
)

// DefaultClusterDomain is the cluster domain when nothing names or reveals
// another.
const DefaultClusterDomain = options.DefaultClusterDomain

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options { return options.Default() }
