package nodecaps

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv makes the test binary, run again, drop its capabilities and
// print its status instead of running the tests.
const childEnv = "NODECAPS_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := KeepOnly(SysAdmin); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ := os.ReadFile("/proc/self/status")
		fmt.Print(string(b))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKeepOnlySysAdmin: after KeepOnly(SysAdmin) the process holds
// CAP_SYS_ADMIN (bit 21) and nothing else in any set, and cannot gain more.
func TestKeepOnlySysAdmin(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dropping capabilities is only observable with some to drop: run the tests as root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "CGO_ENABLED=0") {
			t.Skipf("the test binary was built with cgo: %s", out)
		}
		t.Fatalf("KeepOnly: %v: %s", err, out)
	}
	status := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	const sysAdminOnly = "0000000000200000"
	for key, want := range map[string]string{
		"CapEff": sysAdminOnly, "CapPrm": sysAdminOnly, "CapBnd": sysAdminOnly,
		"CapInh": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1",
	} {
		if status[key] != want {
			t.Errorf("%s = %q, want %q", key, status[key], want)
		}
	}
}
