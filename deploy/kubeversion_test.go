package deploy

import (
	"strings"
	"testing"
)

// TestKubeVersion: the chart installs on the supported minors (1.33 and
// newer, providers' suffixes included) and refuses an older cluster at
// install time with a message that names the requirement
// (docs/install.md, "Supported Kubernetes versions").
func TestKubeVersion(t *testing.T) {
	tool(t, "helm")
	for _, v := range []string{"v1.33.0", "v1.33.5-eks-3025e55", "v1.34.2-gke.1000", "v1.36.3", "v1.37.1"} {
		if _, err := helmRender(namespace, "--kube-version", v, "--skip-tests"); err != nil {
			t.Errorf("Kubernetes %s refused: %v", v, err)
		}
	}
	for _, v := range []string{"v1.32.9", "v1.32.9-eks-1", "v1.28.0"} {
		_, err := helmRender(namespace, "--kube-version", v, "--skip-tests")
		base, _, _ := strings.Cut(v, "-") // helm prints the version without the provider's suffix
		if err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion: >=1.33.0-0 which is incompatible with Kubernetes "+base) {
			t.Errorf("Kubernetes %s: %v, want helm's kubeVersion refusal", v, err)
		}
	}
}
