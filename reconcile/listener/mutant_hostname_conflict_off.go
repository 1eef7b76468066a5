//go:build !robustness_mutant_hostname_conflict

package listener

// mutantNoHostnameConflict is false: every Listener but the first to claim
// a DNS name gets HostnameConflict. The robustness suite's mutant of that
// name (mutant_hostname_conflict.go, build tag
// robustness_mutant_hostname_conflict) turns the check off, to show that
// the suite finds two Listeners publishing one name (make
// robustness-mutants).
const mutantNoHostnameConflict = false
