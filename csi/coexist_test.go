package csi

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// shortDir is a directory whose socket paths fit the 108-byte limit of unix
// socket addresses (t.TempDir paths can be longer).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "coex")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func TestCheckNoOtherPlugin(t *testing.T) {
	dir := shortDir(t)

	// Their node plugin, serving the driver name on the socket.
	live := filepath.Join(dir, "live.sock")
	lis, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, &identityServer{name: "listeners.stackable.tech", version: "26.7.0"})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	// Something else that accepts connections but speaks no CSI.
	mute := filepath.Join(dir, "mute.sock")
	ml, err := net.Listen("unix", mute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Close() })
	go func() {
		for {
			c, err := ml.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	// A plugin that exited and left its socket file.
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	sl.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = sl.Close()

	for _, tc := range []struct {
		name, endpoint string
		want           []string // substrings of the error; none: no error
	}{
		{"nothing there", "unix://" + filepath.Join(dir, "none.sock"), nil},
		{"stale socket", "unix://" + stale, nil},
		{"the Stackable node plugin", "unix://" + live, []string{
			"another CSI plugin still serves " + live,
			`CSI driver "listeners.stackable.tech" version "26.7.0"`,
			"uninstall it first", "docs/migration.md"}},
		{"a process that speaks no CSI", "unix:" + mute, []string{"another CSI plugin still serves " + mute, "does not answer CSI GetPluginInfo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckNoOtherPlugin(t.Context(), tc.endpoint)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error, want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
