//go:build robustness_mutant_gate_listener

package pod

// mutantGateIgnoresListener: see mutants.go.
const mutantGateIgnoresListener = true
