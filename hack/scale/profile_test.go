package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSetGODEBUG(t *testing.T) {
	for _, tc := range []struct {
		name, have, want string
		changed          bool
	}{
		{"replaces the manifests' rate", "memprofilerate=0", "memprofilerate=4096", true},
		{"keeps other settings", "madvdontneed=1,memprofilerate=0", "madvdontneed=1,memprofilerate=4096", true},
		{"adds the setting", "madvdontneed=1", "madvdontneed=1,memprofilerate=4096", true},
		{"already set", "memprofilerate=4096", "memprofilerate=4096", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []corev1.EnvVar{{Name: "GOGC", Value: "25"}, {Name: "GODEBUG", Value: tc.have}}
			if got := setGODEBUG(env, "memprofilerate=4096"); got != tc.changed {
				t.Errorf("changed = %t, want %t", got, tc.changed)
			}
			if env[1].Value != tc.want || env[0].Value != "25" {
				t.Errorf("env = %v, want GODEBUG=%s and GOGC untouched", env, tc.want)
			}
		})
	}
	if setGODEBUG([]corev1.EnvVar{{Name: "GOGC", Value: "25"}}, "memprofilerate=4096") {
		t.Error("changed an env without GODEBUG")
	}
}
