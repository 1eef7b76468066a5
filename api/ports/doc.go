// Package ports holds the one rule that turns the container ports of the
// pods mounting a per-claim listener volume into the Listener's ports. The
// reconciler (which writes those ports) and the CSI node plugin (which waits
// until a starting pod's ports are published) both apply it.
package ports
