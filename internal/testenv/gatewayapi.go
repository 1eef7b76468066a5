package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// InstallGatewayAPI installs the Gateway API's standard CRDs that gateway
// classes use (GatewayClass, Gateway, TLSRoute, TCPRoute v1), from the
// module the project's Gateway API types come from: the CRDs match the
// types.
func InstallGatewayAPI(cfg *rest.Config) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return fmt.Errorf("locate the gateway-api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	var paths []string
	for _, kind := range []string{"gatewayclasses", "gateways", "tlsroutes", "tcproutes"} {
		paths = append(paths, filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml"))
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	return err
}
