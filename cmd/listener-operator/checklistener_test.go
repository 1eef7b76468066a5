package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tree writes a listener volume's default-address with addr and ports.
func tree(t *testing.T, addr string, ports map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "default-address")
	if err := os.MkdirAll(filepath.Join(base, "ports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		if err := os.WriteFile(filepath.Join(base, "address"), []byte(addr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n, v := range ports {
		if err := os.WriteFile(filepath.Join(base, "ports", n), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestCheckListener(t *testing.T) {
	p := freePort(t)
	published := freePort(t) // another number, as a NodePort publishes
	// Something else answers on a port: not the pod.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	otherPort := strconv.Itoa(other.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		name    string
		dir     string
		own     map[string]int
		wantErr string
		wantOut string
	}{
		{"own address answers", tree(t, "127.0.0.1", map[string]string{"check": strconv.Itoa(p)}), nil, "", "port check: 127.0.0.1:" + strconv.Itoa(p) + " answers"},
		{"no volume", filepath.Join(t.TempDir(), "none"), nil, "is a listener volume mounted at", ""},
		{"no address", tree(t, "", nil), nil, "read the listener volume's address", ""},
		{"no ports", tree(t, "127.0.0.1", nil), nil, "publishes no port: give the container a named port", ""},
		{"bad port file", tree(t, "127.0.0.1", map[string]string{"check": "http"}), nil, `port check holds "http"`, ""},
		{"nothing answers", tree(t, "127.0.0.1", map[string]string{"check": strconv.Itoa(published)}), map[string]int{"check": freePort(t)}, "does not answer", ""},
		{"someone else answers", tree(t, "127.0.0.1", map[string]string{"check": otherPort}), map[string]int{"check": freePort(t)}, "token did not come back", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The check retries until its context ends: "nothing answers"
			// takes all of it, the others end at their first answer (a
			// short one failed them on a loaded machine).
			wait := 30 * time.Second
			if c.name == "nothing answers" {
				wait = 3 * time.Second
			}
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			var out bytes.Buffer
			err := checkListener(ctx, c.dir, c.own, &out)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("checkListener: %v, want error containing %q", err, c.wantErr)
			}
			if !strings.Contains(out.String(), c.wantOut) {
				t.Errorf("output %q, want %q", out.String(), c.wantOut)
			}
		})
	}
}

func TestParsePorts(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    map[string]int
		wantErr bool
	}{
		{"", map[string]int{}, false},
		{"check=8080", map[string]int{"check": 8080}, false},
		{"a=1,b=2", map[string]int{"a": 1, "b": 2}, false},
		{"check", nil, true},
		{"check=0", nil, true},
		{"=80", nil, true},
	} {
		got, err := parsePorts(c.in)
		if (err != nil) != c.wantErr || !c.wantErr && len(got) != len(c.want) {
			t.Errorf("parsePorts(%q) = %v, %v", c.in, got, err)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("parsePorts(%q)[%s] = %d, want %d", c.in, k, got[k], v)
			}
		}
	}
}
