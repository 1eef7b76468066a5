package robustness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// kwokNodeAnnotation marks a node as kwok's to manage
// (manageNodesWithAnnotationSelector in hack/kwok/robustness-stages.yaml):
// kwok keeps its lease and plays the pod stages of the pods bound to it.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwokPath is the kwok binary the suite runs: bin (the -robustness.kwok
// flag) or, when empty, bin/tools/kwok, which `make bin/tools/kwok` builds;
// an error that says so when it is not there.
func kwokPath(bin string) (string, error) {
	if bin == "" {
		bin = filepath.Join(testenv.RepoRoot(), "bin", "tools", "kwok")
	}
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("kwok, which marks the histories' pods Running, is not at %s: run make bin/tools/kwok (or pass -robustness.kwok=<kwok binary>)", bin)
	} else if err != nil {
		return "", err
	}
	return bin, nil
}

// startKwok runs kwok against e's API server with the stages of
// hack/kwok/robustness-stages.yaml, its log at logPath.
func startKwok(e *testenv.Env, bin, logPath string) (*testenv.Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return nil, err
	}
	return e.StartProcess(logPath, bin, "--kubeconfig="+e.Kubeconfig,
		"--config="+filepath.Join(testenv.RepoRoot(), "hack", "kwok", "robustness-stages.yaml"))
}
