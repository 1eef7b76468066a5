package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Gateway-class claims (issue 39): what a route per Listener costs the
// leader. The kwok cluster has no Gateway controller, so the harness
// writes each route's status as one would (Accepted, ResolvedRefs) and
// measures the operator's side only: its Services, routes, the Gateway
// API watches and status writes.

const (
	gatewayClassName = "scale-gateway"
	gatewayNamespace = "scale-gateway-system"
)

// gatewayStep installs the Gateway API's CRDs, a Gateway and a gateway
// class, creates n listener pods of that class (one per-claim Listener
// each), plays the Gateway controller until their Listeners are Ready and
// measures.
func (m *measurer) gatewayStep(ctx context.Context, n, all int) (row, error) {
	if n <= 0 {
		return row{}, nil
	}
	say("gateway claims: installing the Gateway API and a gateway class")
	if err := installGatewayCRDs(ctx, m.c); err != nil {
		return row{}, err
	}
	if err := m.c.Create(ctx, scaleGatewayNamespace()); client.IgnoreAlreadyExists(err) != nil {
		return row{}, err
	}
	for _, o := range []client.Object{scaleGateway(), scaleGatewayClass()} {
		// The CRDs are served a moment after they are created.
		if err := waitFor(ctx, time.Minute, "create "+o.GetName(), func() (bool, string, error) {
			err := m.c.Create(ctx, o)
			return client.IgnoreAlreadyExists(err) == nil, fmt.Sprint(err), nil
		}); err != nil {
			return row{}, err
		}
	}
	say("gateway claims: %d listener pods of class %s", n, gatewayClassName)
	start := time.Now()
	if _, err := createAll(ctx, m.c, 0, n, 8, func(i int) client.Object { return gatewayPod(i) }); err != nil {
		return row{}, err
	}
	var routes int
	err := waitFor(ctx, m.wait, fmt.Sprintf("%d gateway Listeners Ready", n), func() (bool, string, error) {
		accepted, made, err := m.acceptRoutes(ctx)
		routes = made
		if err != nil {
			return false, "", err
		}
		ready, err := m.readyOfClass(ctx, gatewayClassName)
		return ready >= n, fmt.Sprintf("%d routes (%d accepted now), %d/%d Ready", made, accepted, ready, n), err
	})
	if err != nil {
		return row{}, err
	}
	say("gateway claims: %d routes, all %d Listeners Ready in %s", routes, n, time.Since(start).Round(time.Second))
	r, err := m.measure(ctx, fmt.Sprintf("+ %d gateway claims (%d claims in all)", n, all+n))
	r.added, r.kind = n, "gateway claims"
	return r, err
}

// acceptRoutes writes, as a Gateway controller would, Accepted and
// ResolvedRefs True on every route of the harness's namespaces that has no
// status for its generation yet; it returns how many it wrote and how
// many routes there are.
func (m *measurer) acceptRoutes(ctx context.Context) (accepted, routes int, err error) {
	for i := range namespaces {
		var list gwv1.TLSRouteList
		if err := m.c.List(ctx, &list, client.InNamespace(namespaceName(i))); err != nil {
			return accepted, routes, err
		}
		for j := range list.Items {
			rt := &list.Items[j]
			routes++
			if len(rt.Status.Parents) > 0 && rt.Status.Parents[0].Conditions[0].ObservedGeneration == rt.Generation {
				continue
			}
			now := metav1.Now()
			rt.Status.Parents = []gwv1.RouteParentStatus{{
				ParentRef: rt.Spec.ParentRefs[0], ControllerName: "scale.test/gateway-controller",
				Conditions: []metav1.Condition{
					{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: rt.Generation, LastTransitionTime: now},
					{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: rt.Generation, LastTransitionTime: now},
				},
			}}
			if err := m.c.Status().Update(ctx, rt); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return accepted, routes, err
			}
			accepted++
		}
	}
	return accepted, routes, nil
}

// readyOfClass counts the Ready Listeners of class.
func (m *measurer) readyOfClass(ctx context.Context, class string) (int, error) {
	n := 0
	for i := range namespaces {
		var ls v1alpha1.ListenerList
		if err := m.c.List(ctx, &ls, client.InNamespace(namespaceName(i))); err != nil {
			return 0, err
		}
		for _, l := range ls.Items {
			if l.Status.ClassName == class && ready(&l) {
				n++
			}
		}
	}
	return n, nil
}

func scaleGatewayClass() *v1alpha1.ListenerClass {
	return &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName}, Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname:    &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.scale.test"},
		Gateway:     &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: gatewayNamespace, SectionName: "tls"}}},
	}}
}

func scaleGateway() *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: "shared"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: "scale",
		Listeners: []gwv1.Listener{{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType, Hostname: ptr.To(gwv1.Hostname("*.gw.scale.test")),
			TLS:           &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)},
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}}},
	}}
}

// gatewayPod is listener pod i of the gateway step: a per-claim Listener
// of the gateway class.
func gatewayPod(i int) client.Object {
	p := listenerPod("gw", 2*i) // an even index asks for a class
	p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Annotations = map[string]string{v1alpha1.AnnotationListenerClass: gatewayClassName}
	p.Spec.Containers[0].Ports[0].Name = "tls"
	return p
}

// installGatewayCRDs creates the Gateway API's GatewayClass, Gateway and
// TLSRoute CRDs from the module the operator's types come from. (Not
// testenv.InstallGatewayAPI: envtest registers a --kubeconfig flag.)
func installGatewayCRDs(ctx context.Context, c client.Client) error {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return fmt.Errorf("locate the gateway-api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	for _, kind := range []string{"gatewayclasses", "gateways", "tlsroutes"} {
		data, err := os.ReadFile(filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml"))
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		if err := c.Create(ctx, crd); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create the %s CRD: %w", kind, err)
		}
	}
	return nil
}

func scaleGatewayNamespace() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatewayNamespace}}
}

func ready(l *v1alpha1.Listener) bool {
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue
}
