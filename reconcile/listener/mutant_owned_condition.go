//go:build robustness_mutant_owned_condition

package listener

// mutantConditionNotOwned: see mutants.go.
const mutantConditionNotOwned = true
