package deploy

import (
	"context"
	"net/http"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestLeaseRequestsHaveTheirOwnPriority installs the FlowSchema the Helm
// chart renders in another namespace and checks, with the API server's own
// priority and fairness classification (the X-Kubernetes-PF-PriorityLevel-UID
// header of each response), that the manager's Lease requests in its
// namespace go to the leader-election priority level, and that nothing else
// does: its other requests, a Lease of another namespace, another service
// account's Lease requests. Without it, renewals wait in workload-low behind
// the operator's own bursts (make scale-10x lost the leader that way).
func TestLeaseRequestsHaveTheirOwnPriority(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ns = "lo-flowschema"
	var fs *flowcontrolv1.FlowSchema
	for _, u := range parse(t, helmIn(t, ns)) {
		if u.GetKind() == "FlowSchema" {
			fs = &flowcontrolv1.FlowSchema{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fs); err != nil {
				t.Fatalf("rendered FlowSchema: %v", err)
			}
		}
	}
	if fs == nil {
		t.Fatal("the Helm chart renders no FlowSchema")
	}
	if err := e.Client.Create(ctx, fs); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create FlowSchema: %v", err)
	}
	// t.Context() is done by the time cleanups run.
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), fs) })
	leaderElection := &flowcontrolv1.PriorityLevelConfiguration{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: "leader-election"}, leaderElection); err != nil {
		t.Fatalf("the API server's leader-election priority level: %v", err)
	}
	manager := "system:serviceaccount:" + ns + ":listener-operator"
	priority := func(user, path string) (types.UID, error) {
		cfg := rest.CopyConfig(e.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return "", err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		return types.UID(resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")), nil
	}
	lease := func(namespace string) string {
		return "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases/listener-operator.listeners.stackable.tech"
	}
	// The API server's classifier picks the new FlowSchema up in a moment.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		uid, err := priority(manager, lease(ns))
		return uid == leaderElection.UID, err
	})
	if err != nil {
		t.Fatalf("the manager's Lease request never reached the leader-election priority level: %v", err)
	}
	for _, tc := range []struct {
		what, user, path string
	}{
		{"the manager's other requests", manager, "/api/v1/namespaces/" + ns + "/pods"},
		{"a Lease of another namespace", manager, lease("kube-system")},
		{"another service account's Lease", "system:serviceaccount:" + ns + ":default", lease(ns)},
	} {
		t.Run(tc.what, func(t *testing.T) {
			uid, err := priority(tc.user, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if uid == "" || uid == leaderElection.UID {
				t.Errorf("GET %s as %s: priority level %q, want another than leader-election (%s)", tc.path, tc.user, uid, leaderElection.UID)
			}
		})
	}
}
