package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/csi/addresstree"
)

// checkListenerCommand is what the chart's `helm test` pod runs: it reads
// the listener volume mounted at --dir, answers on every port the volume
// names, and connects to its own published address on each, so that it
// proves what a workload relies on: the volume was published, and the
// address it names reaches the pod.
func checkListenerCommand() command {
	return command{
		summary: "check a mounted listener volume: its address answers (helm test)",
		setup: func(fs *flag.FlagSet, stdout io.Writer) func(context.Context) error {
			dir := fs.String("dir", v1alpha1.MountPath, "where the listener volume is mounted")
			timeout := fs.Duration("timeout", 2*time.Minute, "how long to retry until the address answers")
			serve := fs.String("serve", "", "the container's own ports, name=number,... (a NodePort or LoadBalancer publishes another number); default: the published numbers")
			return func(ctx context.Context) error {
				own, err := parsePorts(*serve)
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				return checkListener(ctx, *dir, own, stdout)
			}
		},
	}
}

// listenerPort is one port a listener volume publishes.
type listenerPort struct {
	name   string
	number int
}

// readDefaultAddress reads the address and the ports of a listener
// volume's default-address.
func readDefaultAddress(dir string) (string, []listenerPort, error) {
	base := filepath.Join(dir, addresstree.DefaultAddress)
	raw, err := os.ReadFile(filepath.Join(base, addresstree.AddressFile))
	if err != nil {
		return "", nil, fmt.Errorf("read the listener volume's address (is a listener volume mounted at %s?): %w", dir, err)
	}
	addr := strings.TrimSpace(string(raw))
	if addr == "" {
		return "", nil, fmt.Errorf("%s is empty", filepath.Join(base, addresstree.AddressFile))
	}
	entries, err := os.ReadDir(filepath.Join(base, addresstree.PortsDir))
	if err != nil {
		return "", nil, fmt.Errorf("read the listener volume's ports: %w", err)
	}
	var ports []listenerPort
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(base, addresstree.PortsDir, e.Name()))
		if err != nil {
			return "", nil, fmt.Errorf("read port %s: %w", e.Name(), err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n < 1 || n > 65535 {
			return "", nil, fmt.Errorf("port %s holds %q, not a port number", e.Name(), b)
		}
		ports = append(ports, listenerPort{e.Name(), n})
	}
	if len(ports) == 0 {
		return "", nil, fmt.Errorf("the listener volume publishes no port: give the container a named port")
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].name < ports[j].name })
	return addr, ports, nil
}

// checkListener serves a token on every container port (the port the
// Service targets is the container's own, under the same name) and dials
// the published address and port until the token comes back.
func checkListener(ctx context.Context, dir string, own map[string]int, out io.Writer) error {
	addr, ports, err := readDefaultAddress(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listener volume at %s: address %s, ports %v\n", dir, addr, ports)
	return answerAndDial(ctx, addr, ports, own, out)
}

// parsePorts parses --serve: name=number,...
func parsePorts(s string) (map[string]int, error) {
	m := map[string]int{}
	if s == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, num, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(num)
		if !ok || name == "" || err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--serve: %q is not name=port (e.g. --serve=check=8080)", kv)
		}
		m[name] = n
	}
	return m, nil
}

// answerAndDial listens on each port's container port (own, else the
// published number) and dials addr on the published number until the
// token it sent is echoed back.
func answerAndDial(ctx context.Context, addr string, ports []listenerPort, own map[string]int, out io.Writer) error {
	tok := make([]byte, 8)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	for _, p := range ports {
		local := p.number
		if n, ok := own[p.name]; ok {
			local = n
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(local))
		if err != nil {
			return fmt.Errorf("listen on port %s (%d): %w", p.name, local, err)
		}
		defer l.Close()
		go echo(l)
	}
	for _, p := range ports {
		target := net.JoinHostPort(addr, strconv.Itoa(p.number))
		var last error
		for {
			if last = roundTrip(ctx, target, token); last == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("port %s: %s does not answer: %w (the Listener's Service, its endpoints and the network between pods and that address are where to look)", p.name, target, last)
			case <-time.After(time.Second):
			}
		}
		fmt.Fprintf(out, "port %s: %s answers\n", p.name, target)
	}
	return nil
}

// echo answers every connection with the line it received.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(io.LimitReader(c, 128)).ReadString('\n')
			if err == nil {
				_, _ = io.WriteString(c, line)
			}
		}()
	}
}

// roundTrip sends token to target and checks that it comes back.
func roundTrip(ctx context.Context, target, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, token+"\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(c, 128)).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if strings.TrimSpace(line) != token {
		return errors.New("something else answers there (the token did not come back)")
	}
	return nil
}
