//go:build robustness_mutant_hostname_conflict

package listener

// mutantNoHostnameConflict: see mutants.go.
const mutantNoHostnameConflict = true
