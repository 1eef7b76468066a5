package testenv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// KubernetesVersion is the version of the control plane binaries tests run.
const KubernetesVersion = "v1.36.3"

// Options shape the environment a test package needs.
type Options struct {
	// WebhookInstallOptions registers webhook configurations with the API
	// server and generates serving certificates for them (see envtest).
	WebhookInstallOptions envtest.WebhookInstallOptions

	// ControllerManager lists the kube-controller-manager controllers to run
	// (e.g. "garbagecollector", "statefulset"); empty runs none.
	ControllerManager []string

	// APIServerFlags are extra kube-apiserver flags ("--name=value").
	APIServerFlags []string

	// OwnerReferencesPermissionEnforcement enables the admission plugin of
	// that name (on in OpenShift): setting blockOwnerDeletion in an owner
	// reference then needs update on the owner's finalizers subresource.
	// It only binds users outside system:masters, such as a test's
	// restricted operator identity.
	OwnerReferencesPermissionEnforcement bool
}

// AdmissionPluginsFlag is the kube-apiserver flag that enables the extra
// admission plugins opts asks for ("" when none).
func (opts Options) AdmissionPluginsFlag() string {
	if opts.OwnerReferencesPermissionEnforcement {
		return "--enable-admission-plugins=OwnerReferencesPermissionEnforcement"
	}
	return ""
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a cluster-admin client with the project's types registered.
	Client client.Client
	// Scheme has client-go's and the project's types.
	Scheme *apiruntime.Scheme
	// Environment is the underlying envtest environment.
	Environment *envtest.Environment
	// BinDir holds the control plane binaries (kubectl among them).
	BinDir string
	// Kubeconfig is the path of an admin kubeconfig for command-line tools.
	Kubeconfig string

	kcm     *exec.Cmd
	kcmLog  *bytes.Buffer
	tempDir string
	// guard stops the control plane if the test process dies without
	// calling Stop (a panic, Ctrl-C, SIGTERM).
	guard *guardian
}

// Main starts an environment, stores it in *env, runs the package's tests
// and stops everything before exiting. Under -short it starts nothing and
// leaves *env nil, so Require skips the tests that need it.
func Main(m *testing.M, env **Env, opts Options) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: cannot start the control plane: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Require skips t when no control plane was started because of -short, and
// fails it if one should have been.
func Require(t testing.TB, env *Env) *Env {
	t.Helper()
	if env != nil {
		return env
	}
	if testing.Short() {
		t.Skip("needs a kube-apiserver: run without -short")
	}
	t.Fatal("testenv: no control plane (was testenv.Main called from TestMain?)")
	return nil
}

// RepoRoot is the root of the project's source tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir is where the control plane binaries are: $KUBEBUILDER_ASSETS, or
// bin/k8s/<version> under the repository.
func BinDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s", KubernetesVersion)
}

// Scheme returns a scheme with client-go's and the project's types.
func Scheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	// Gateway API types, for gateway classes (their CRDs are installed by
	// the tests that need them).
	if err := gwv1.Install(s); err != nil {
		panic(err)
	}
	// TCPRoute v1alpha2, for clusters that serve only it.
	if err := gwv1alpha2.Install(s); err != nil {
		panic(err)
	}
	return s
}

// Start starts a control plane with the project's CRDs installed.
func Start(opts Options) (*Env, error) {
	bin := BinDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: build it with `make k8s-binaries` (hack/build-k8s.sh): %w", name, bin, err)
		}
	}
	scheme := Scheme()
	te := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		WebhookInstallOptions: opts.WebhookInstallOptions,
		// The first start on a cold machine (page cache empty) can be slow.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	args := te.ControlPlane.GetAPIServer().Configure()
	flags := opts.APIServerFlags
	if f := opts.AdmissionPluginsFlag(); f != "" {
		flags = append(flags[:len(flags):len(flags)], f)
	}
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		args.Append(name, value)
	}
	guard, err := startGuard()
	if err != nil {
		return nil, err
	}
	cfg, err := te.Start()
	if err != nil {
		_ = guard.done()
		return nil, fmt.Errorf("start envtest with binaries from %s: %w", bin, err)
	}
	e := &Env{Config: cfg, Scheme: scheme, Environment: te, BinDir: bin, guard: guard}
	if err := e.guardControlPlane(opts); err != nil {
		_ = e.Stop()
		return nil, err
	}
	if err := e.init(opts); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// guardControlPlane tells the guard about etcd, kube-apiserver and the
// directories envtest made for them.
func (e *Env) guardControlPlane(opts Options) error {
	cp := e.Environment.ControlPlane
	var pids []int
	for _, arg := range []string{"--data-dir=" + cp.Etcd.DataDir, "--cert-dir=" + cp.APIServer.CertDir} {
		for _, pid := range processesWithArg(arg) {
			if _, ppid := procStat(pid); ppid == os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) != 2 {
		return fmt.Errorf("guard the control plane: found %d of its 2 processes (etcd, kube-apiserver)", len(pids))
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, e.guard.watch(pid))
	}
	dirs := []string{cp.Etcd.DataDir, cp.APIServer.CertDir}
	if opts.WebhookInstallOptions.LocalServingCertDir == "" {
		// envtest made it (it only fills the field in e.Environment's copy).
		dirs = append(dirs, e.Environment.WebhookInstallOptions.LocalServingCertDir)
	}
	for _, d := range dirs {
		if d != "" {
			errs = append(errs, e.guard.remove(d))
		}
	}
	return errors.Join(errs...)
}

func (e *Env) init(opts Options) error {
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	e.Client = c
	if e.tempDir, err = os.MkdirTemp("", "testenv-"); err != nil {
		return err
	}
	if err := e.guard.remove(e.tempDir); err != nil {
		return err
	}
	user, err := e.Environment.ControlPlane.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.tempDir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	if len(opts.ControllerManager) > 0 {
		return e.startControllerManager(opts.ControllerManager)
	}
	return nil
}

// startControllerManager runs kube-controller-manager with only the given
// controllers, serving nothing (no port to collide with other packages).
func (e *Env) startControllerManager(controllers []string) error {
	path := filepath.Join(e.BinDir, "kube-controller-manager")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kube-controller-manager is missing from %s: build it with `make k8s-binaries`: %w", e.BinDir, err)
	}
	e.kcmLog = &bytes.Buffer{}
	cmd := exec.Command(path,
		"--kubeconfig="+e.Kubeconfig,
		"--authentication-kubeconfig="+e.Kubeconfig,
		"--authorization-kubeconfig="+e.Kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers="+strings.Join(controllers, ","),
		// Tests want changes to show up promptly.
		"--concurrent-gc-syncs=5",
		"--v=1",
	)
	cmd.Stdout = e.kcmLog
	cmd.Stderr = e.kcmLog
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	e.kcm = cmd
	return e.guard.watch(cmd.Process.Pid)
}

// ControllerManagerLog returns what kube-controller-manager printed so far,
// for failure messages.
func (e *Env) ControllerManagerLog() string {
	if e.kcmLog == nil {
		return ""
	}
	return e.kcmLog.String()
}

// Guard adds a process the test started (a gateway, a proxy) to those the
// guard stops when the test process dies without calling Stop. Stop does
// not stop it: the test does, before Stop.
func (e *Env) Guard(pid int) error {
	return e.guard.watch(pid)
}

// Kubectl runs the kubectl built with the control plane against it and
// returns its combined output.
func (e *Env) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	path := filepath.Join(e.BinDir, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("kubectl is missing from %s: build it with `make k8s-binaries`: %w", e.BinDir, err)
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + e.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Stop stops everything Start started.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil && e.kcm.Process != nil {
		_ = e.kcm.Process.Kill()
		_ = e.kcm.Wait()
	}
	if e.Environment != nil {
		if err := e.Environment.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop envtest: %w", err))
		}
	}
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
	if e.guard != nil {
		if err := e.guard.done(); err != nil {
			errs = append(errs, fmt.Errorf("stop the control plane's guard: %w", err))
		}
	}
	return errors.Join(errs...)
}
