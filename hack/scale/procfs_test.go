package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStatusRSS: the split comes from RssAnon and RssFile in kB; a status
// without them is not an answer.
func TestStatusRSS(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, status string
		anon, file   float64
		ok           bool
	}{
		{"both", "Name:\tlistener-operator\nVmRSS:\t   60000 kB\nRssAnon:\t   24696 kB\nRssFile:\t   34064 kB\nRssShmem:\t       0 kB\n", 24696 * 1024, 34064 * 1024, true},
		{"kernel thread", "Name:\tkworker\nState:\tI (idle)\n", 0, 0, false},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.status), 0o644); err != nil {
			t.Fatal(err)
		}
		anon, file, ok := statusRSS(path)
		if ok != tc.ok || (ok && (anon != tc.anon || file != tc.file)) {
			t.Errorf("%s: got %v %v %v, want %v %v %v", tc.name, anon, file, ok, tc.anon, tc.file, tc.ok)
		}
	}
	if _, _, ok := statusRSS(filepath.Join(dir, "missing")); ok {
		t.Error("a missing status file answered")
	}
	if _, _, ok := residentSplit(""); ok {
		t.Error("a pod without a UID answered")
	}
}
