//go:build robustness_mutant_range_loadbalancer

package listener

// mutantRangeIgnoresLoadBalancer: see mutants.go.
const mutantRangeIgnoresLoadBalancer = true
