package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// of its two TLS entry points (sections p0 and p1 listen on them) and of
// its TCP entry points (section t<i> listens on TCPPorts[i], tcp.go).
type GatewayEnv struct {
	Ports    [2]int
	TCPPorts [tcpSections]int
}

// startTraefik installs the Gateway API CRDs of the Experimental channel
// (TCPRoute v1alpha2, the only version Traefik reads, is served by them
// alone) and the GatewayClass, runs Traefik (bin/tools/traefik, `make
// gateway-tools`) out of cluster with the Gateway provider only and its
// experimental channel on (without it Traefik marks a TCP section
// Conflicted), as the e2e cluster runs it, and waits until it accepted
// the class. stop ends it; its log is bin/robustness-traefik.log.
func startTraefik(ctx context.Context, e *testenv.Env) (gw *GatewayEnv, stop func(), err error) {
	bin := filepath.Join(testenv.RepoRoot(), "bin", "tools", "traefik")
	crds := filepath.Join(testenv.RepoRoot(), "bin", "gateway-crds", "experimental")
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
		"--providers.kubernetesgateway.experimentalchannel=true",
		"--global.checknewversion=false", "--global.sendanonymoususage=false", "--log.level=INFO"}
	for i := range gw.Ports {
		if gw.Ports[i], err = testenv.FreePort(); err != nil {
			return nil, nil, err
		}
		args = append(args, fmt.Sprintf("--entrypoints.p%d.address=127.0.0.1:%d", i, gw.Ports[i]))
	}
	for i := range gw.TCPPorts {
		if gw.TCPPorts[i], err = testenv.FreePort(); err != nil {
			return nil, nil, err
		}
		args = append(args, fmt.Sprintf("--entrypoints.t%d.address=127.0.0.1:%d", i, gw.TCPPorts[i]))
	}
	traefik, err := e.StartProcess(filepath.Join(testenv.RepoRoot(), "bin", "robustness-traefik.log"), bin, args...)
	if err != nil {
		return nil, nil, err
	}
	stop = traefik.Stop
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
