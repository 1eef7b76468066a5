// Package version holds the build's version, set at link time with
// -ldflags "-X github.com/listener-operator/listener-operator/internal/version.Version=…".
package version

import "runtime/debug"

// Version is the release version; "dev" for a build from a work tree.
var Version = "dev"

// String is the version line that `listener-operator version` prints and the
// CSI driver reports.
func String() string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	return "listener-operator " + Version + rev
}
