package robustness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// gatewayClassName is the GatewayClass of every Gateway of the suite,
// Traefik's.
const gatewayClassName = "traefik"

// GatewayEnv is Traefik running against the suite's API server: the ports
// of its two entry points (sections p0 and p1 listen on them).
type GatewayEnv struct {
	Ports [2]int
}

// startTraefik installs the Gateway API CRDs and the GatewayClass, runs
// Traefik (bin/tools/traefik, `make gateway-tools`) out of cluster with the
// Gateway provider only, as `make gateway-smoke` runs it, and waits until
// it accepted the class. stop ends it; its log is bin/robustness-traefik.log.
func startTraefik(ctx context.Context, e *testenv.Env) (gw *GatewayEnv, stop func(), err error) {
	bin := filepath.Join(testenv.RepoRoot(), "bin", "tools", "traefik")
	crds := filepath.Join(testenv.RepoRoot(), "bin", "gateway-crds", "standard")
	for _, p := range []string{bin, crds} {
		if _, err := os.Stat(p); err != nil {
			return nil, nil, fmt.Errorf("-robustness.gateway needs Traefik and the Gateway API CRDs it is built against: run `make gateway-tools`: %w", err)
		}
	}
	// Every CRD of the channel (Traefik waits for the informers of all of
	// them), server-side: they are too large for the last-applied annotation.
	if out, err := e.Kubectl(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return nil, nil, fmt.Errorf("install the Gateway API CRDs from %s: %w: %s", crds, err, out)
	}
	if out, err := e.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		return nil, nil, fmt.Errorf("wait for the Gateway API CRDs: %w: %s", err, out)
	}
	gw = &GatewayEnv{}
	args := []string{"--providers.kubernetesgateway=true", "--providers.kubernetesgateway.statusaddress.ip=127.0.0.1",
		"--global.checknewversion=false", "--global.sendanonymoususage=false", "--log.level=INFO"}
	for i := range gw.Ports {
		if gw.Ports[i], err = freePort(); err != nil {
			return nil, nil, err
		}
		args = append(args, fmt.Sprintf("--entrypoints.p%d.address=127.0.0.1:%d", i, gw.Ports[i]))
	}
	logFile, err := os.Create(filepath.Join(testenv.RepoRoot(), "bin", "robustness-traefik.log"))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	// Out of cluster Traefik reads $KUBECONFIG; KUBERNETES_SERVICE_* would
	// send it down the in-cluster path.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBERNETES_SERVICE_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+e.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
	}
	if err := e.Guard(cmd.Process.Pid); err != nil {
		stop()
		return nil, nil, err
	}
	class := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName}, Spec: gwv1.GatewayClassSpec{ControllerName: "traefik.io/gateway-controller"}}
	if err := e.Client.Create(ctx, class); err != nil {
		stop()
		return nil, nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(class), class); err == nil && meta.IsStatusConditionTrue(class.Status.Conditions, "Accepted") {
			return gw, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("Traefik did not accept GatewayClass %s within a minute (log: bin/robustness-traefik.log)", gatewayClassName)
		}
	}
}

// freePort is a TCP port on 127.0.0.1 nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
