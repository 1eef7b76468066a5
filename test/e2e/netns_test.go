//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Node 1 of the project's cluster is the host itself; node i ≥ 2 lives in
// the network namespace /var/run/netns/<node name> (hack/cluster/cluster.sh).
// A request from the host to node 1's address is local traffic for node 1's
// kube-proxy, which sends it to any endpoint of the Service even under
// externalTrafficPolicy Local; to see what a client outside node 1 gets, ask
// from another node's namespace.

// netnsOf is the network namespace file of a node, or "" for the host's node.
func netnsOf(node string) string {
	p := "/var/run/netns/" + node
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// httpGetFrom fetches http://addr:port/ over a TCP connection opened inside
// the network namespace netns ("" means the host's) and returns the body.
// Each call opens a new connection: a kept-alive connection would pin one
// backend of a Service.
func httpGetFrom(ctx context.Context, netns, addr, port string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := dialIn(ctx, netns, net.JoinHostPort(addr, port))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(addr, port)+"/", nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return "", fmt.Errorf("send request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return strings.TrimSpace(string(body)), err
}

// dialIn opens a TCP connection from inside netns. The socket is created
// while this goroutine's OS thread is in netns, and keeps that namespace
// after the thread returns to its own.
func dialIn(ctx context.Context, netns, hostPort string) (net.Conn, error) {
	var d net.Dialer
	if netns == "" {
		return d.DialContext(ctx, "tcp", hostPort)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		conn, err, restored := dialInLocked(ctx, netns, hostPort)
		if restored {
			// Only a thread back in its own namespace may serve other
			// goroutines; otherwise it ends with this goroutine.
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

func dialInLocked(ctx context.Context, netns, hostPort string) (conn net.Conn, err error, restored bool) {
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, fmt.Errorf("open this thread's network namespace: %w", err), true
	}
	defer self.Close()
	target, err := os.Open(netns)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", netns, err), true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter network namespace %s: %w", netns, err), true
	}
	var d net.Dialer
	conn, err = d.DialContext(ctx, "tcp", hostPort)
	if serr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); serr != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("return from network namespace %s: %w", netns, serr), false
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s from %s: %w", hostPort, netns, err), true
	}
	return conn, nil, true
}
