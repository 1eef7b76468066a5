//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

const (
	// operatorNamespace is where config/default installs the operator.
	operatorNamespace = "listener-operator"
	demoImage         = "localhost/listener-demo:dev"
	// treeRoot is where every container of an opted-in StatefulSet finds its
	// listener tree.
	treeRoot = v1alpha1.MountPath
)

// cluster is the running cluster the tests talk to.
type cluster struct {
	client     client.Client
	kubeconfig string
	kubectl    string
}

var k8s *cluster

func TestMain(m *testing.M) {
	c, err := connect()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	k8s = c
	os.Exit(m.Run())
}

func connect() (*cluster, error) {
	kubeconfig := os.Getenv("E2E_KUBECONFIG")
	if kubeconfig == "" {
		return nil, fmt.Errorf("E2E_KUBECONFIG is not set: run `make e2e`, which starts the local cluster and deploys the operator")
	}
	kubectl := os.Getenv("E2E_KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join("..", "..", "bin", "k8s", "v1.36.3", "kubectl")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := gwv1.Install(scheme); err != nil { // gateway_test.go
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", kubeconfig, err)
	}
	return &cluster{client: c, kubeconfig: kubeconfig, kubectl: kubectl}, nil
}

// run runs kubectl and returns stdout, stderr and the error.
func (c *cluster) run(ctx context.Context, stdin string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// kubectl runs kubectl and fails the test if it fails.
func (c *cluster) kubectlOK(t *testing.T, ctx context.Context, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := c.run(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// namespace creates a fresh namespace for one test and deletes it afterwards
// (E2E_KEEP=1 keeps it for a look around).
func namespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	if err := k8s.client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv("E2E_KEEP") != "" {
			t.Logf("keeping namespace %s", ns.Name)
			return
		}
		_ = k8s.client.Delete(context.WithoutCancel(ctx), ns)
	})
	return ns.Name
}

// eventually polls cond every half second until it returns true or timeout
// passes; the last message cond gave explains a failure.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		// The poll that the deadline cuts short says only that; keep
		// what the one before saw.
		if ctx.Err() == nil || last == "" {
			last = msg
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not reached within %s: %s", what, timeout, last)
	}
}

// webhooksAnswer waits until the API server reaches the operator's
// webhooks five times in a row (a server-side dry-run create of a
// ListenerClass, which the validating webhook must admit). Tests that take
// the operator down call it before they end: a Ready Deployment is not yet
// a reachable webhook Service (kube-proxy may still reject connections to
// it), and the next test would read "connection refused".
func webhooksAnswer(t *testing.T, ctx context.Context) {
	t.Helper()
	probe := listenerClass("e2e-webhook-probe", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	inRow := 0
	eventually(t, ctx, 3*time.Minute, "the operator's webhooks answer 5 times in a row", func(ctx context.Context) (bool, string) {
		err := k8s.client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			inRow = 0
			return false, err.Error()
		}
		inRow++
		return inRow >= 5, fmt.Sprintf("%d in a row", inRow)
	})
}

func listenerClass(name string, spec v1alpha1.ListenerClassSpec) *v1alpha1.ListenerClass {
	return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

// ensureClass creates a cluster-scoped class for the tests (kept between
// tests and runs: classes are shared and harmless).
func ensureClass(t *testing.T, ctx context.Context, class *v1alpha1.ListenerClass) {
	t.Helper()
	if err := k8s.client.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ListenerClass %s: %v", class.Name, err)
	}
}

// demoStatefulSet is examples/statefulset.yaml: a plain StatefulSet that opts
// in with one label and names its class with one annotation.
func demoStatefulSet(ns, name, class string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels:      map[string]string{v1alpha1.LabelEnabled: "true"},
			Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name:            "hello",
						Image:           demoImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"-listen", ":8080"},
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					}},
				},
			},
		},
	}
}

// podsReady waits until the StatefulSet's pods 0..n-1 are Running and Ready
// and returns them by name.
func podsReady(t *testing.T, ctx context.Context, ns, sts string, n int, timeout time.Duration) map[string]*corev1.Pod {
	t.Helper()
	pods := map[string]*corev1.Pod{}
	eventually(t, ctx, timeout, fmt.Sprintf("%d pods of %s/%s ready", n, ns, sts), func(ctx context.Context) (bool, string) {
		var list corev1.PodList
		if err := k8s.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": sts}); err != nil {
			return false, err.Error()
		}
		clear(pods)
		var states []string
		for i := range list.Items {
			p := &list.Items[i]
			states = append(states, p.Name+"="+podState(p))
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && isReady(p) {
				pods[p.Name] = p
			}
		}
		sort.Strings(states)
		return len(pods) == n && len(list.Items) == n, strings.Join(states, ", ")
	})
	return pods
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is what `kubectl get pods` shows in STATUS, plus the last event-ish
// detail of a waiting container.
func podState(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return w.Reason
		}
	}
	return string(p.Status.Phase)
}

// tree reads the pod's listener tree from inside the pod: every file under
// /stackable/listener (links followed) with its content.
func tree(t *testing.T, ctx context.Context, ns, pod string) map[string]string {
	t.Helper()
	script := `cd ` + treeRoot + ` && for f in $(find -L . -type f | grep -v '/\.\.' | sort); do printf '%s=%s\n' "${f#./}" "$(cat "$f")"; done`
	out := k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, pod, "-c", "hello", "--", "sh", "-c", script)
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			files[k] = v
		}
	}
	return files
}

// defaultAddress is what a program in the pod reads: the default address
// and the port named http.
func defaultAddress(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	addr, port := files["default-address/address"], files["default-address/ports/http"]
	if addr == "" || port == "" {
		t.Fatalf("the pod's tree has no default-address/address and ports/http: %v", files)
	}
	return addr, port
}

// noKeepAlive opens a new connection for every request: a kept-alive
// connection to a Service address would pin one of its backends.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// httpGet fetches http://addr:port/ from the host (this machine, outside the
// cluster network) and returns the body.
func httpGet(ctx context.Context, addr, port string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// JoinHostPort brackets an IPv6 address (a dual-stack cluster's).
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(addr, port)+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return strings.TrimSpace(string(body)), err
}

// answers waits until http://addr:port/ answers from the host with the given
// pod's greeting. kube-proxy programs node ports and ClusterIPs some time
// after a pod is Ready, so a single try would fail on a slow machine.
func answers(t *testing.T, ctx context.Context, addr, port, pod string) {
	t.Helper()
	eventually(t, ctx, time.Minute, fmt.Sprintf("curl http://%s:%s/ answered by %s", addr, port, pod), func(ctx context.Context) (bool, string) {
		body, err := httpGet(ctx, addr, port)
		if err != nil {
			return false, err.Error()
		}
		return body == "hello from "+pod, "answered " + body
	})
}

// listener reads the Listener of a StatefulSet pod's claim: the claim (and
// so the Listener) of pod <sts>-<i> is listener-<sts>-<i>.
func listener(t *testing.T, ctx context.Context, ns, pod string) *v1alpha1.Listener {
	t.Helper()
	var l v1alpha1.Listener
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.VolumeName + "-" + pod}, &l); err != nil {
		t.Fatalf("get the Listener of pod %s/%s: %v", ns, pod, err)
	}
	return &l
}
