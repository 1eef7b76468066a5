package pod

import (
	"github.com/listener-operator/listener-operator/api/podready"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The robustness suite's mutant of this package (make robustness-mutants):
// it re-introduces a defect behind a build tag, to show that the suite
// finds it. Without the tag it is false.
//
//   - robustness_mutant_gate_listener (mutant_gate_listener.go): the
//     readiness gate says a pod is reachable while its Listener is not
//     Ready (the gate of issue 50 judged without the Listener's condition).

// mutateVerdict is verdict as the mutant would write it.
func mutateVerdict(verdict podready.Verdict) podready.Verdict {
	if mutantGateIgnoresListener && verdict.Reason == v1alpha1.ReasonListenerNotReady {
		return podready.Verdict{Ready: true, Reason: v1alpha1.ReasonAddressesReady, Message: "every listener volume is reachable at the addresses the pod was told"}
	}
	return verdict
}
