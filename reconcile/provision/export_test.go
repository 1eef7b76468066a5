package provision

import "github.com/listener-operator/listener-operator/internal/testenv"

// The package's TestMain is in main_test.go, of package provision_test: it
// sets the provisioner up through the registry (reconcile), which imports
// this package.

// env is the control plane the package's tests share: kube-apiserver and
// kube-controller-manager's PV controller (which binds claims to volumes),
// with one manager running the provisioner as the operator's restricted
// identity, on the reconcilers' cache as the controller runs it.
var env *testenv.Env

// Env is env, for TestMain.
var Env = &env
