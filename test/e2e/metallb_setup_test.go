//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetalLB on the cluster (hack/cluster/metallb.sh and settings.sh, which
// these constants repeat): it serves Services of metallbClass only, from
// pool listeners (.240–.253) or, for a Service that names it, pool tiny
// (.254).
const (
	metallbNamespace = "metallb-system"
	metallbClass     = "listeners.test/metallb"
	metallbTinyPool  = "tiny"
	// clientPrefix names the client's network namespace and veth: cleanup
	// deletes only what carries it.
	clientPrefix = "lbe2e-"
	// clientAddr is a hand-made address (settings.sh): given to no pod and
	// outside the pool.
	clientAddr = "10.88.0.239/24"
	// bridge is the cluster bridge: node 1's interface (the host's own
	// network namespace) and where every node's veth ends.
	bridge = "listener0"
)

// metallbPool holds both pools: .240–.253 (listeners) and .254 (tiny).
var metallbPool = netip.MustParsePrefix("10.88.0.240/28")

// inPool says whether addr is one of MetalLB's addresses (either pool).
func inPool(addr string) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && metallbPool.Contains(a) && a != netip.MustParseAddr("10.88.0.255")
}

// requireMetalLB skips the test on a cluster deployed without MetalLB
// (make metallb-tools not run).
func requireMetalLB(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, _, err := k8s.run(ctx, "", "-n", metallbNamespace, "get", "daemonset/speaker"); err != nil {
		t.Skip("no MetalLB on this cluster: make metallb-tools, then deploy (make e2e does both)")
	}
}

// l2Client is a client on the cluster bridge in a network namespace of its
// own: no kube-proxy, no route but the bridge's subnet. It reaches a
// load-balancer address only if a node answers ARP for it, which is what
// MetalLB's L2 mode does (a client on the host would be answered by node
// 1's kube-proxy rules whatever MetalLB did).
type l2Client struct {
	netns string
}

// newL2Client makes the client's network namespace and its veth into the
// bridge; the test's cleanup deletes both.
func newL2Client(t *testing.T, ctx context.Context) *l2Client {
	t.Helper()
	suffix := rand.String(5)
	c := &l2Client{netns: clientPrefix + suffix}
	host := clientPrefix + suffix + "h" // 12 characters: under IFNAMSIZ
	steps := [][]string{
		{"netns", "add", c.netns},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", c.netns},
		{"link", "set", host, "master", bridge, "up"},
		{"-n", c.netns, "addr", "add", clientAddr, "dev", "eth0"},
		{"-n", c.netns, "link", "set", "eth0", "up"},
		{"-n", c.netns, "link", "set", "lo", "up"},
	}
	t.Cleanup(func() {
		// Deleting the namespace deletes its veth and so the host's end.
		_ = exec.Command("ip", "netns", "del", c.netns).Run()
	})
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, "ip", s...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return c
}

// get fetches http://addr:port/ from inside the client's namespace with
// the cluster's demo server (bin/cluster/demo-server -get).
func (c *l2Client) get(ctx context.Context, addr, port string) (string, error) {
	bin := filepath.Join("..", "..", "bin", "cluster", "demo-server")
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", c.netns, bin, "-timeout", "2s",
		"-get", "http://"+net.JoinHostPort(addr, port)+"/").CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// answers waits until pod answers at addr:port from the client.
func (c *l2Client) answers(t *testing.T, ctx context.Context, addr, port, pod string) {
	t.Helper()
	eventually(t, ctx, time.Minute, fmt.Sprintf("the L2 client gets http://%s:%s/ answered by %s", addr, port, pod), func(ctx context.Context) (bool, string) {
		body, err := c.get(ctx, addr, port)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, body)
		}
		return body == "hello from "+pod, "answered " + body
	})
}

// neighbour is the MAC address the client's neighbour table holds for ip
// ("" when none or not resolved).
func (c *l2Client) neighbour(ctx context.Context, ip string) string {
	out, err := exec.CommandContext(ctx, "ip", "-n", c.netns, "neigh", "show", ip).Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// nodeMAC is the MAC address a node answers with on the bridge: node 1's
// is the bridge's own (the host), node i's is its veth's end in its
// network namespace (named as the node).
func nodeMAC(t *testing.T, ctx context.Context, node string) string {
	t.Helper()
	args := []string{"-j", "link", "show", bridge} // node 1 is the host
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == node {
			args = []string{"-n", node, "-j", "link", "show", "eth0"}
		}
	}
	out, err = exec.CommandContext(ctx, "ip", args...).Output()
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return links[0].Address
}

// announcer is the node MetalLB's speakers elected to announce the
// Service's address (its ServiceL2Status), "" while none.
func announcer(ctx context.Context, ns, svc string) string {
	out, _, err := k8s.run(ctx, "", "get", "servicel2statuses.metallb.io", "-A", "-o", "json")
	if err != nil {
		return ""
	}
	var list struct {
		Items []struct {
			Status struct {
				Node             string `json:"node"`
				ServiceName      string `json:"serviceName"`
				ServiceNamespace string `json:"serviceNamespace"`
			} `json:"status"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(out), &list) != nil {
		return ""
	}
	for _, s := range list.Items {
		if s.Status.ServiceName == svc && s.Status.ServiceNamespace == ns {
			return s.Status.Node
		}
	}
	return ""
}

// ingressIP waits until the Service has a load-balancer address and
// returns its first.
func ingressIP(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	var ip string
	eventually(t, ctx, time.Minute, fmt.Sprintf("Service %s/%s gets an address from MetalLB", ns, name), func(ctx context.Context) (bool, string) {
		var svc corev1.Service
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
			return false, err.Error()
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, "no ingress; last event: " + lastEvent(ctx, ns, name)
		}
		ip = svc.Status.LoadBalancer.Ingress[0].IP
		return true, ""
	})
	return ip
}

// stopSpeaker stops MetalLB's speaker on node (the DaemonSet's pods keep
// off it) until the test ends, then brings it back and waits for it.
func stopSpeaker(t *testing.T, ctx context.Context, node string) {
	t.Helper()
	affinity := fmt.Sprintf(`{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":`+
		`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":[%q]}]}]}}}}}}}`, node)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		k8s.kubectlOK(t, ctx, "", "-n", metallbNamespace, "patch", "daemonset/speaker", "--type=merge", "-p", `{"spec":{"template":{"spec":{"affinity":null}}}}`)
		k8s.kubectlOK(t, ctx, "", "-n", metallbNamespace, "rollout", "status", "daemonset/speaker", "--timeout=120s")
	})
	k8s.kubectlOK(t, ctx, "", "-n", metallbNamespace, "patch", "daemonset/speaker", "--type=merge", "-p", affinity)
	eventually(t, ctx, time.Minute, "no speaker on "+node, func(ctx context.Context) (bool, string) {
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(metallbNamespace), client.MatchingLabels{"component": "speaker"}); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node {
				return false, "pod " + p.Name + " " + podState(&p)
			}
		}
		return true, ""
	})
}

// webPod is a demo server answering "hello from <name>" on 8080, and a
// LoadBalancer Service of MetalLB's class in front of it.
func webPod(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "web", Image: demoImage, Args: []string{"-listen", ":8080"},
				Env:   []corev1.EnvVar{{Name: "POD_NAME", Value: name}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			}},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(metallbClass), Selector: labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, o := range []client.Object{pod, svc} {
		if err := k8s.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, name, err)
		}
	}
}
