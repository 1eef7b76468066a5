package main

import (
	"slices"
	"testing"

	"github.com/cert-manager/cert-manager/pkg/controller"
)

// The binary runs the controllers the e2e cluster needs and no other
// issuer: ACME, Vault and Venafi are the user's own cert-manager
// (docs/install.md, "How the cert-manager mode is tested").
func TestRegistersOnlyTheTestedControllers(t *testing.T) {
	want := []string{
		"certificaterequests-approver",
		"certificaterequests-issuer-ca",
		"certificaterequests-issuer-selfsigned",
		"certificates-issuing",
		"certificates-key-manager",
		"certificates-readiness",
		"certificates-request-manager",
		"certificates-revision-manager",
		"certificates-trigger",
		"clusterissuers",
		"issuers",
	}
	var got []string
	for name := range controller.Known() {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("controllers registered: %v\nwant exactly: %v", got, want)
	}
}
