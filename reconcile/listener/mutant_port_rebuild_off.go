//go:build !robustness_mutant_port_rebuild

package listener

// mutantKeepRemovedPorts: see mutants.go.
const mutantKeepRemovedPorts = false
