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

// TestHeapSampleRate: the pprof endpoint samples the heap only when asked
// to, and never overrides a rate GODEBUG set.
func TestHeapSampleRate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		current        int
		pprof, samples bool
		want           int
	}{
		{"as shipped: no endpoint, no sampling", 0, false, true, 0},
		{"endpoint with heap samples turns sampling on", 0, true, true, defaultMemProfileRate},
		{"endpoint without heap samples keeps it off", 0, true, false, 0},
		{"a rate GODEBUG set is kept", 4096, true, true, 4096},
		{"a rate GODEBUG set is kept without the endpoint", 4096, false, false, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heapSampleRate(tc.current, tc.pprof, tc.samples); got != tc.want {
				t.Errorf("heapSampleRate(%d, %v, %v) = %d, want %d", tc.current, tc.pprof, tc.samples, got, tc.want)
			}
		})
	}
}
