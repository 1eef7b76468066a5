//go:build robustness_mutant_hostname_conflict

package listener

// mutantNoHostnameConflict: the robustness mutant that publishes every
// Listener's name, taken or not (see mutant_hostname_conflict_off.go).
const mutantNoHostnameConflict = true
