package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// coexistTimeout bounds how long the start-up check waits for whatever
// listens on the socket to say who it is.
const coexistTimeout = 3 * time.Second

// CheckNoOtherPlugin refuses to start a plugin whose socket another process
// still serves. The Stackable listener-operator's node DaemonSet serves the
// same driver name from the same host path
// (<kubelet>/plugins/listeners.stackable.tech/csi.sock); replacing its live
// socket would leave two plugins and one registration, with kubelet talking
// to whichever bound last. A socket file nobody listens on is stale (a
// plugin that exited) and is no reason to refuse: Listen replaces it.
func CheckNoOtherPlugin(ctx context.Context, endpoint string) error {
	path := strings.TrimPrefix(strings.TrimPrefix(endpoint, "unix://"), "unix:")
	if path == "" {
		return nil // Listen reports the bad endpoint
	}
	if _, err := os.Lstat(path); err != nil {
		return nil // nothing there, or Listen reports why it cannot look
	}
	ctx, cancel := context.WithTimeout(ctx, coexistTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil // stale: nobody accepts connections there
	}
	_ = c.Close()
	who := "a process that does not answer CSI GetPluginInfo"
	if info, err := pluginInfo(ctx, path); err == nil {
		who = fmt.Sprintf("CSI driver %q version %q", info.GetName(), info.GetVendorVersion())
	}
	return fmt.Errorf("another CSI plugin still serves %s (%s): two node plugins for driver listeners.stackable.tech cannot share a node. "+
		"If it is the Stackable listener-operator, uninstall it first (helm uninstall <its release>; see docs/migration.md); "+
		"this plugin starts once its socket is gone", path, who)
}

// pluginInfo asks whatever serves the socket at path who it is.
func pluginInfo(ctx context.Context, path string) (*csi.GetPluginInfoResponse, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return nil, errors.Join(errors.New("GetPluginInfo"), err)
	}
	return info, nil
}
