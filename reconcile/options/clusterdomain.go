package options

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// DefaultClusterDomain is the cluster domain when nothing names or reveals
// another.
const DefaultClusterDomain = "cluster.local"

// ClusterDomainFromResolvConf finds the cluster domain in a pod's
// resolv.conf: kubelet writes the search list "<namespace>.svc.<domain>
// svc.<domain> <domain>" (then the node's own search domains) for pods with
// dnsPolicy ClusterFirst or ClusterFirstWithHostNet. It returns the domain
// of the first "svc." entry of the last search line (the one the resolver
// uses), "" when there is none (dnsPolicy Default or None, no cluster DNS).
func ClusterDomainFromResolvConf(data []byte) string {
	var search []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "search" {
			search = fields[1:]
		}
	}
	for _, s := range search {
		s = strings.TrimSuffix(strings.ToLower(s), ".")
		if domain, ok := strings.CutPrefix(s, "svc."); ok && domain != "" {
			return domain
		}
	}
	return ""
}

// ClusterDomainFromKubeletConfigz reads clusterDomain from the answer of a
// kubelet's /configz endpoint ({"kubeletconfig": {"clusterDomain": …}}).
func ClusterDomainFromKubeletConfigz(data []byte) (string, error) {
	var z struct {
		KubeletConfig *struct {
			ClusterDomain string `json:"clusterDomain"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return "", fmt.Errorf("decode the kubelet's configz: %w", err)
	}
	if z.KubeletConfig == nil {
		return "", fmt.Errorf("the kubelet's configz has no kubeletconfig")
	}
	d := strings.TrimSuffix(z.KubeletConfig.ClusterDomain, ".")
	if d == "" {
		return "", fmt.Errorf("the kubelet's configuration sets no clusterDomain")
	}
	return d, nil
}

// ClusterDomainSources are where ResolveClusterDomain looks.
type ClusterDomainSources struct {
	// ResolvConf reads the pod's /etc/resolv.conf.
	ResolvConf func() ([]byte, error)
	// Kubelet reads a kubelet's /configz (through the API server's node
	// proxy); used only with Options.ClusterDomainFromKubelet.
	Kubelet func(ctx context.Context) ([]byte, error)
}

// ResolveClusterDomain sets o.ClusterDomain when neither --cluster-domain
// nor KUBERNETES_CLUSTER_DOMAIN did: from the kubelet's configuration when
// o.ClusterDomainFromKubelet, else from the search list of resolv.conf,
// else DefaultClusterDomain. It returns where the domain came from, and
// why a source it tried told nothing (the caller logs both).
func (o *Options) ResolveClusterDomain(ctx context.Context, src ClusterDomainSources) (from string, warning error) {
	if o.ClusterDomain != "" {
		return "--cluster-domain or KUBERNETES_CLUSTER_DOMAIN", nil
	}
	var warnings []string
	if o.ClusterDomainFromKubelet && src.Kubelet != nil {
		data, err := src.Kubelet(ctx)
		if err == nil {
			var d string
			if d, err = ClusterDomainFromKubeletConfigz(data); err == nil {
				o.ClusterDomain = d
				return "the kubelet's configuration", nil
			}
		}
		warnings = append(warnings, fmt.Sprintf("--cluster-domain-from-kubelet: %v (does the operator's ClusterRole allow get on nodes/proxy? Helm value kubernetesClusterDomainFromKubelet)", err))
	}
	if src.ResolvConf != nil {
		data, err := src.ResolvConf()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("read resolv.conf: %v", err))
		} else if d := ClusterDomainFromResolvConf(data); d != "" {
			o.ClusterDomain = d
			return "the search list of /etc/resolv.conf", joinWarnings(warnings)
		} else {
			warnings = append(warnings, "resolv.conf has no svc.<domain> search entry (pod dnsPolicy is not ClusterFirst?)")
		}
	}
	o.ClusterDomain = DefaultClusterDomain
	return "the default", joinWarnings(warnings)
}

func joinWarnings(w []string) error {
	if len(w) == 0 {
		return nil
	}
	return fmt.Errorf("cluster domain: %s", strings.Join(w, "; "))
}
