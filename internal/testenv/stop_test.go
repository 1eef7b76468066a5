package testenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv tells the test binary, run again by TestControlPlaneStopsWhenTestDies,
// to be the test that dies: TestDyingTest then starts a control plane and
// dies as the variable says ("panic", or "wait" for a signal).
const helperEnv = "TESTENV_DYING_TEST"

// TestControlPlaneStopsWhenTestDies runs a test that starts a control plane
// and then panics, or is interrupted (Ctrl-C) or terminated, and checks that
// no etcd or kube-apiserver of that run is left running and that their
// directories are gone.
func TestControlPlaneStopsWhenTestDies(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver: run without -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		how    string
		signal syscall.Signal
	}{
		{name: "test panics", how: "panic"},
		{name: "interrupted", how: "wait", signal: syscall.SIGINT},
		{name: "terminated", how: "wait", signal: syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestDyingTest$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.how)
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids, dirs := readStarted(t, bufio.NewScanner(stdout))
			// Whatever happens below, stop what this test made run.
			t.Cleanup(func() {
				for _, pid := range pids {
					if running(pid) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				for _, d := range dirs {
					_ = os.RemoveAll(d)
				}
			})
			for _, pid := range pids {
				if !running(pid) {
					t.Fatalf("process %d of the dying test's control plane is not running before it dies", pid)
				}
			}
			if tc.signal != 0 {
				if err := cmd.Process.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			} else {
				_, _ = stdin.Write([]byte("die\n"))
			}
			if err := cmd.Wait(); err == nil {
				t.Fatal("the dying test exited without an error")
			}
			Eventually(t, 30*time.Second, "the dying test's control plane stopped", func() error {
				for _, pid := range pids {
					if running(pid) {
						return fmt.Errorf("process %d (%s) still runs", pid, commandLine(pid))
					}
				}
				for _, d := range dirs {
					if _, err := os.Stat(d); err == nil {
						return fmt.Errorf("directory %s is still there", d)
					}
				}
				return nil
			})
		})
	}
}

// TestDyingTest is the test TestControlPlaneStopsWhenTestDies runs in a
// process of its own: it starts a control plane, prints the process ids of
// its etcd and kube-apiserver and their directories, then dies.
func TestDyingTest(t *testing.T) {
	how := os.Getenv(helperEnv)
	if how == "" {
		t.Skip("run by TestControlPlaneStopsWhenTestDies")
	}
	e, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	etcd, apiserver := e.Environment.ControlPlane.Etcd, e.Environment.ControlPlane.APIServer
	var pids []string
	for _, arg := range []string{"--data-dir=" + etcd.DataDir, "--cert-dir=" + apiserver.CertDir} {
		for _, pid := range processesWithArg(arg) {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	fmt.Printf("\npids %s\ndirs %s %s %s\n", strings.Join(pids, " "), etcd.DataDir, apiserver.CertDir, e.tempDir)
	switch how {
	case "panic":
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		panic("a test panics")
	default:
		select {}
	}
}

// readStarted reads what TestDyingTest printed: the process ids of its
// control plane and its directories.
func readStarted(t *testing.T, out *bufio.Scanner) (pids []int, dirs []string) {
	t.Helper()
	for out.Scan() {
		kind, rest, _ := strings.Cut(out.Text(), " ")
		switch kind {
		case "pids":
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pid %q: %v", f, err)
				}
				pids = append(pids, pid)
			}
		case "dirs":
			dirs = strings.Fields(rest)
			if len(pids) != 2 || len(dirs) != 3 {
				t.Fatalf("the dying test started processes %v with directories %v, want etcd and kube-apiserver and 3 directories", pids, dirs)
			}
			// The rest of its output is not needed but must be drained.
			go func() {
				for out.Scan() {
				}
			}()
			return pids, dirs
		}
	}
	t.Fatalf("the dying test did not say what it started: %v", out.Err())
	return nil, nil
}

func commandLine(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(raw), "\x00"), "\x00", " ")
}

// TestGuard runs the guard on what a test process tells it: "done" leaves
// everything alone; the end of its input without "done" (the test process
// died) stops the processes and removes the directories.
func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done        bool
		wantStopped bool
	}{
		{name: "test process stopped everything", done: true, wantStopped: false},
		{name: "test process died", done: false, wantStopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sleeper := exec.Command("sleep", "60")
			if err := sleeper.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = sleeper.Wait(); close(exited) }()
			t.Cleanup(func() { _ = sleeper.Process.Kill(); <-exited })
			dir := t.TempDir()
			in := fmt.Sprintf("pid %d\ndir %s\n", sleeper.Process.Pid, dir)
			if tc.done {
				in += "done\n"
			}
			guard(strings.NewReader(in), time.Second)
			select {
			case <-exited:
				if !tc.wantStopped {
					t.Error("the guard stopped the process")
				}
			case <-time.After(2 * time.Second):
				if tc.wantStopped {
					t.Error("the guard left the process running")
				}
			}
			if _, err := os.Stat(dir); (err != nil) != tc.wantStopped {
				t.Errorf("directory left: %v, want %v", err == nil, !tc.wantStopped)
			}
		})
	}
}
