//go:build robustness_mutant_warn_exposure

package service

// mutantWarnExposure: see mutants.go.
const mutantWarnExposure = true
