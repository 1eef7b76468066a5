package options

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestClusterDomainFromResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name, conf, want string
	}{
		{"kubelet's list", "search listener-operator.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n", "cluster.local"},
		{"another domain, node's search domains after it", "nameserver 10.0.0.10\nsearch ops.svc.corp.example svc.corp.example corp.example lab.example.org\n", "corp.example"},
		{"last search line wins", "search svc.old.example\nsearch default.svc.k8s.test svc.k8s.test k8s.test\n", "k8s.test"},
		{"trailing dot, capitals", "search ns.svc.Corp.Example. svc.Corp.Example. Corp.Example.\n", "corp.example"},
		{"dnsPolicy Default: the node's own", "search lab.example.org\nnameserver 192.168.1.1\n", ""},
		{"no search line", "nameserver 10.96.0.10\n", ""},
		{"bare svc. entry", "search svc.\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterDomainFromResolvConf([]byte(tc.conf)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClusterDomainFromKubeletConfigz(t *testing.T) {
	for _, tc := range []struct {
		name, body, want, wantErr string
	}{
		{"set", `{"kubeletconfig":{"clusterDomain":"corp.example","clusterDNS":["10.0.0.10"]}}`, "corp.example", ""},
		{"trailing dot", `{"kubeletconfig":{"clusterDomain":"corp.example."}}`, "corp.example", ""},
		{"unset", `{"kubeletconfig":{"clusterDNS":[]}}`, "", "sets no clusterDomain"},
		{"not configz", `{"kind":"Status","message":"forbidden"}`, "", "has no kubeletconfig"},
		{"not JSON", `403 Forbidden`, "", "decode the kubelet's configz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ClusterDomainFromKubeletConfigz([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResolveClusterDomain(t *testing.T) {
	resolv := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
	kubelet := func(s string, err error) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { return []byte(s), err }
	}
	const corp = "search ns.svc.corp.example svc.corp.example corp.example\n"
	for _, tc := range []struct {
		name        string
		opts        Options
		src         ClusterDomainSources
		want, from  string
		wantWarning string
	}{
		{"flag or env wins", Options{ClusterDomain: "set.example", ClusterDomainFromKubelet: true}, ClusterDomainSources{ResolvConf: resolv(corp), Kubelet: kubelet(`{"kubeletconfig":{"clusterDomain":"k.example"}}`, nil)}, "set.example", "--cluster-domain or KUBERNETES_CLUSTER_DOMAIN", ""},
		{"resolv.conf by default", Options{}, ClusterDomainSources{ResolvConf: resolv(corp), Kubelet: kubelet(`{"kubeletconfig":{"clusterDomain":"k.example"}}`, nil)}, "corp.example", "the search list of /etc/resolv.conf", ""},
		{"kubelet when opted in", Options{ClusterDomainFromKubelet: true}, ClusterDomainSources{ResolvConf: resolv(corp), Kubelet: kubelet(`{"kubeletconfig":{"clusterDomain":"k.example"}}`, nil)}, "k.example", "the kubelet's configuration", ""},
		{"kubelet forbidden: resolv.conf", Options{ClusterDomainFromKubelet: true}, ClusterDomainSources{ResolvConf: resolv(corp), Kubelet: kubelet("", errors.New(`nodes "n1" is forbidden`))}, "corp.example", "the search list of /etc/resolv.conf", "nodes/proxy"},
		{"nothing found: cluster.local", Options{}, ClusterDomainSources{ResolvConf: resolv("nameserver 1.1.1.1\n")}, "cluster.local", "the default", "no svc.<domain> search entry"},
		{"unreadable resolv.conf: cluster.local", Options{}, ClusterDomainSources{ResolvConf: func() ([]byte, error) { return nil, errors.New("no such file") }}, "cluster.local", "the default", "read resolv.conf: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			from, warn := o.ResolveClusterDomain(context.Background(), tc.src)
			if o.ClusterDomain != tc.want || from != tc.from {
				t.Errorf("domain %q from %q, want %q from %q", o.ClusterDomain, from, tc.want, tc.from)
			}
			if tc.wantWarning == "" && warn != nil || tc.wantWarning != "" && (warn == nil || !strings.Contains(warn.Error(), tc.wantWarning)) {
				t.Errorf("warning %v, want %q", warn, tc.wantWarning)
			}
		})
	}
}
