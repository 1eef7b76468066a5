package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// env is one control plane shared by the tests that run subcommands
// against a real API server.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

func TestRun(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{args: []string{"version"}, code: 0, wantStdout: "listener-operator "},
		{args: nil, code: 2, wantStderr: "usage: listener-operator <command>"},
		{args: []string{"frobnicate"}, code: 2, wantStderr: `unknown command "frobnicate"`},
		{args: []string{"version", "--bogus"}, code: 2, wantStderr: "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
