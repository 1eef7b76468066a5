package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A test binary does not get to stop its control plane when a test panics
// (TestMain's code after m.Run never runs), when a goroutine panics, or when
// it is interrupted or terminated; and etcd and kube-apiserver run in process
// groups of their own (envtest starts them so), so Ctrl-C does not reach
// them either. So Start also starts a guard: the test binary run again as
// a small process of its own, which learns over a pipe which processes and
// directories make up the control plane. When the pipe closes without a
// "done" (the test process is gone, however it died) the guard stops those
// processes and removes those directories.

// guardEnv, set in its environment, makes a test binary the guard.
const guardEnv = "LISTENER_OPERATOR_TESTENV_GUARD"

// guardGrace is how long the guard lets the control plane shut down after
// SIGTERM before it kills it.
const guardGrace = 10 * time.Second

func init() {
	if os.Getenv(guardEnv) != "" {
		guard(os.Stdin, guardGrace)
		os.Exit(0)
	}
}

// guardian is the test process's end of the guard's pipe.
type guardian struct {
	cmd *exec.Cmd
	in  io.WriteCloser
}

// startGuard starts the guard, in a process group of its own so that the
// Ctrl-C that stops the tests does not stop it too.
func startGuard() (*guardian, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), guardEnv+"=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the control plane's guard: %w", err)
	}
	return &guardian{cmd: cmd, in: in}, nil
}

// watch tells the guard to stop process pid if the test process dies.
func (g *guardian) watch(pid int) error {
	_, err := fmt.Fprintf(g.in, "pid %d\n", pid)
	return err
}

// remove tells the guard to remove dir if the test process dies.
func (g *guardian) remove(dir string) error {
	_, err := fmt.Fprintf(g.in, "dir %s\n", dir)
	return err
}

// done tells the guard that the test process stopped everything itself,
// and waits for it to exit.
func (g *guardian) done() error {
	_, err := io.WriteString(g.in, "done\n")
	return errors.Join(err, g.in.Close(), g.cmd.Wait())
}

// guard reads what to stop from in until "done", which means nothing, or
// the end, which means the test process is gone: it then sends the
// processes SIGTERM, kills those still running after grace, and removes the
// directories.
func guard(in io.Reader, grace time.Duration) {
	var pids []int
	var dirs []string
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		kind, arg, _ := strings.Cut(lines.Text(), " ")
		switch kind {
		case "pid":
			if pid, err := strconv.Atoi(arg); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		case "dir":
			dirs = append(dirs, arg)
		case "done":
			return
		}
	}
	stop(pids, grace)
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// stop sends each process SIGTERM, waits up to grace for them to exit and
// kills those that did not.
func stop(pids []int, grace time.Duration) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if running(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// running reports whether process pid exists and has not exited (a zombie,
// exited but not yet reaped by its parent, does not count).
func running(pid int) bool {
	state, _ := procStat(pid)
	return state != "" && state != "Z"
}

// procStat returns pid's state ("R", "S", "Z", …) and its parent's id from
// /proc, or "" when pid is gone.
func procStat(pid int) (state string, ppid int) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	// The state and the parent follow the command name, which is in
	// parentheses and may itself hold spaces and parentheses.
	i := strings.LastIndexByte(string(raw), ')')
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid
}

// processesWithArg lists the processes one of whose arguments is arg.
func processesWithArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(raw), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
