package service

// The robustness suite's mutants of this package (make robustness-mutants):
// each re-introduces a defect that was fixed, behind a build tag, to show
// that the suite finds it. Without the tags both are false.
//
//   - robustness_mutant_warn_copies (mutant_warn_copies.go): mode Warn
//     copies every key off the allow-list, onto a Service that did not
//     carry it and over what the class sets itself (issue 48, shape 1);
//   - robustness_mutant_warn_exposure (mutant_warn_exposure.go): mode Warn
//     treats an exposure key as one off the allow-list, so a Service that
//     carries it takes the tenant's value.
