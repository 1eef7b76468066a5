//go:build !robustness_mutant_warn_copies

package service

// mutantWarnCopies: see mutants.go.
const mutantWarnCopies = false
