package nodeloss

import (
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// The package's TestMain is in main_test.go, of package nodeloss_test: it
// sets the controllers up through the registry (reconcile), which imports
// this package. What it shares with the tests of this package is here.

// env is the control plane the package's tests share: kube-apiserver, and
// kube-controller-manager's StatefulSet controller, garbage collector and
// PVC protection, with one manager running the operator's reconcilers and
// this package's controller as the operator's restricted identity.
var env *testenv.Env

// Env is env, for TestMain.
var Env = &env

// testHandoverTimeout is short so that the orphan test does not wait long.
const testHandoverTimeout = 3 * time.Second

// TestHandoverTimeout and LeaderTestPrefix are the constants, for
// TestMain.
const (
	TestHandoverTimeout = testHandoverTimeout
	LeaderTestPrefix    = leaderTestPrefix
)

// SetupAlone sets up this package's controller alone, as the registry
// does (TestMain sets it: reconcile.SetupOnly); the leader-change test
// runs it in managers of its own.
var SetupAlone func(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error
