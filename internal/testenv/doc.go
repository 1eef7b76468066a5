// Package testenv starts a real control plane for tests: etcd and
// kube-apiserver (through controller-runtime's envtest) with the project's
// CRDs installed, and, on request, kube-controller-manager running chosen
// controllers (garbage collector, StatefulSet, …). The binaries are the ones
// hack/build-k8s.sh builds from the Go module proxy into bin/k8s/<version>/.
//
// A test package starts one environment in TestMain and shares it:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }
//
// A package whose tests need the operator's controllers running uses
// MainWithManager instead: it also starts one manager, as the operator's
// restricted identity, with the controllers its ManagerOptions.Setup
// registers, and waits for its cache before the tests run. Converges,
// Create and Env.Namespace are the helpers such tests share.
//
// A control plane outlives no test process: a guard process (stop.go) stops
// etcd, kube-apiserver and kube-controller-manager and removes their
// directories when the test process dies without calling Stop, because a
// test panicked or the run was interrupted or terminated.
//
// With -short no control plane is started and Require skips the tests that
// need one, saying why; otherwise a control plane that cannot start fails the
// whole package.
package testenv
