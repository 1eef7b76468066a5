package deploy

import (
	"slices"
	"strings"
	"testing"
)

// TestHelmClusterDomainFromKubelet: by default no object of the chart grants
// the kubelet API (nodes/proxy); kubernetesClusterDomainFromKubelet grants
// the operator get on it, passes the flag and the node name.
func TestHelmClusterDomainFromKubelet(t *testing.T) {
	for _, tc := range []struct {
		values    []string
		wantGrant bool
	}{
		{nil, false},
		{[]string{"kubernetesClusterDomainFromKubelet=true"}, true},
		// A domain set by value wins: nothing to read, nothing granted.
		{[]string{"kubernetesClusterDomainFromKubelet=true", "kubernetesClusterDomain=corp.example"}, false},
	} {
		t.Run(strings.Join(tc.values, ","), func(t *testing.T) {
			o := parse(t, helm(t, tc.values...))
			var granted []string
			for k, u := range o {
				if (u.GetKind() == "ClusterRole" || u.GetKind() == "Role") && grants(u, "", "nodes/proxy", "", "get") {
					granted = append(granted, k)
				}
			}
			if tc.wantGrant != (len(granted) > 0) {
				t.Fatalf("roles granting get nodes/proxy: %v, want some: %v", granted, tc.wantGrant)
			}
			if tc.wantGrant {
				b := o.get(t, "ClusterRoleBinding", "", "listener-operator-kubelet-config")
				if got := str(t, b, "roleRef", "name"); got != "listener-operator-kubelet-config" {
					t.Errorf("binding refers to %s", got)
				}
			}
			mgr := container(t, o.get(t, "Deployment", namespace, "listener-operator"), "manager")
			hasFlag := slices.Contains(args(t, mgr), "--cluster-domain-from-kubelet")
			if hasFlag != (len(tc.values) > 0) {
				t.Errorf("manager args %v: --cluster-domain-from-kubelet present %v", args(t, mgr), hasFlag)
			}
		})
	}
}
