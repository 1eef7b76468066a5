package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a program a test runs out of cluster against the environment
// (Traefik, MetalLB's controller): StartProcess starts it, Stop stops it.
type Process struct {
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{}
	waitErr error
}

// StartProcess runs bin with args against the control plane as its admin,
// through $KUBECONFIG (without KUBERNETES_SERVICE_*, which would send it
// down the in-cluster path), writing its output to logPath. The guard
// stops it should the test process die.
func (e *Env) StartProcess(logPath, bin string, args ...string) (*Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBERNETES_SERVICE_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+e.Kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	if err := e.Guard(cmd.Process.Pid); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// ExitedWithin waits up to d for the process to exit, and says whether it
// did and with what.
func (p *Process) ExitedWithin(d time.Duration) (bool, error) {
	select {
	case <-p.exited:
		return true, p.waitErr
	case <-time.After(d):
		return false, nil
	}
}

// Stop sends SIGTERM, kills the process after 15 s, and closes its log.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.log.Close()
}

// FreePort is a TCP port on 127.0.0.1 nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
