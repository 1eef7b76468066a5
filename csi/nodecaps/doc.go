// Package nodecaps narrows the CSI node plugin's own privileges at start.
//
// Kubernetes grants Bidirectional mount propagation, which the plugin
// needs to mount sealed volumes that kubelet and the pod then see, only to
// privileged containers, and a privileged container gets every
// capability whatever its securityContext says. So the plugin drops them
// itself, before it serves anything: KeepOnly(CAP_SYS_ADMIN) leaves only
// the right to mount and unmount, in every capability set of every thread,
// and sets no_new_privs so nothing it runs can gain more.
package nodecaps
