package listener

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestListenerGetsServiceAndClusterIPStatus(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	hostClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	ipClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP})

	web := reconciletest.Listener(ns, "web", hostClass.Name, reconciletest.Port("http", 8080), v1alpha1.ListenerPort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})
	web.Labels = map[string]string{"team": "shop"}
	web.Spec.ExtraPodSelectorLabels = map[string]string{"app": "web"}
	testenv.Create(t, ctx, c, web, reconciletest.Listener(ns, "db", ipClass.Name, reconciletest.Port("sql", 5432)))

	l := reconciletest.WaitReason(t, ctx, c, ns, "web", v1alpha1.ReasonReady)
	want := []v1alpha1.ListenerIngress{{Address: "web." + ns + ".svc.example.test", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080, "dns": 53}}}
	if !reflect.DeepEqual(l.Status.IngressAddresses, want) || l.Status.ServiceName != "web" || l.Status.ServiceType != v1alpha1.ServiceTypeClusterIP {
		t.Errorf("status = %+v, want service web, ClusterIP, addresses %+v", l.Status, want)
	}
	if len(l.Status.NodePorts) != 0 {
		t.Errorf("ClusterIP listener publishes node ports %v", l.Status.NodePorts)
	}

	svc := reconciletest.GetService(t, ctx, c, ns, "web", nil)
	if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != l.UID || ref.Kind != "Listener" {
		t.Errorf("service controller = %+v, want Listener web (%s)", ref, l.UID)
	}
	wantLabels := map[string]string{"team": "shop", LabelName: "listener", LabelInstance: "web", LabelManagedBy: v1alpha1.FieldManager}
	if !reflect.DeepEqual(svc.Labels, wantLabels) {
		t.Errorf("service labels = %v, want %v", svc.Labels, wantLabels)
	}
	wantSelector := map[string]string{"app": "web", names.PodSelectorLabel("web"): v1alpha1.PodSelectorLabelValue}
	if !reflect.DeepEqual(svc.Spec.Selector, wantSelector) {
		t.Errorf("service selector = %v, want %v", svc.Spec.Selector, wantSelector)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !svc.Spec.PublishNotReadyAddresses || svc.Spec.ExternalTrafficPolicy != "" || svc.Spec.AllocateLoadBalancerNodePorts != nil {
		t.Errorf("service spec = %+v, want a ClusterIP publishing not-ready addresses, without LB or traffic policy fields", svc.Spec)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 || svc.Spec.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("service ports = %+v", svc.Spec.Ports)
	}

	db := reconciletest.WaitReason(t, ctx, c, ns, "db", v1alpha1.ReasonReady)
	dbSvc := reconciletest.GetService(t, ctx, c, ns, "db", nil)
	if len(db.Status.IngressAddresses) != 1 || db.Status.IngressAddresses[0].Address != dbSvc.Spec.ClusterIP || db.Status.IngressAddresses[0].AddressType != v1alpha1.AddressTypeIP {
		t.Errorf("IP-preferring listener addresses = %+v, want the cluster IP %s", db.Status.IngressAddresses, dbSvc.Spec.ClusterIP)
	}

	// What the controller wrote is what it wants: a resync writes nothing.
	want2, _, err := desiredService(l, hostClass, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := serviceUpToDate(svc, want2); err != nil || !ok {
		t.Errorf("serviceUpToDate(service read from the API server) = %v, %v; want true: a steady cluster would be written to", ok, err)
	}
	reconciletest.WaitEvent(t, ctx, c, ns, "web", EventServiceCreated)
}

func TestServiceFollowsListenerAndClass(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, ServiceAnnotations: map[string]string{"keep": "1", "drop": "1"}})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "app", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, "app", v1alpha1.ReasonReady)

	// Ports change with the Listener.
	l := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app"}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.Ports = []v1alpha1.ListenerPort{reconciletest.Port("https", 443)}
	l.Labels = map[string]string{"tier": "front"}
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	reconciletest.GetService(t, ctx, c, ns, "app", func(s *corev1.Service) error {
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "https" || s.Spec.Ports[0].Port != 443 {
			return fmt.Errorf("ports %+v", s.Spec.Ports)
		}
		if s.Labels["tier"] != "front" {
			return fmt.Errorf("labels %v lack the Listener's new label", s.Labels)
		}
		return nil
	})
	// A label change alone (no new generation) reaches the Service too.
	// (The controller may still be writing the status: retry on conflict,
	// as any client would.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err
		}
		l.Labels = map[string]string{"tier": "back"}
		return c.Update(ctx, l)
	}); err != nil {
		t.Fatal(err)
	}
	reconciletest.GetService(t, ctx, c, ns, "app", func(s *corev1.Service) error {
		if s.Labels["tier"] != "back" {
			return fmt.Errorf("labels %v", s.Labels)
		}
		return nil
	})
	reconciletest.WaitStatus(t, ctx, c, ns, "app", func(l *v1alpha1.Listener) error {
		if len(l.Status.IngressAddresses) != 1 || !reflect.DeepEqual(l.Status.IngressAddresses[0].Ports, map[string]int32{"https": 443}) {
			return fmt.Errorf("addresses %+v", l.Status.IngressAddresses)
		}
		return nil
	})

	// The class changes: an annotation goes away, the type becomes NodePort
	// with a traffic policy.
	if err := c.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
		t.Fatal(err)
	}
	class.Spec.ServiceAnnotations = map[string]string{"keep": "2"}
	class.Spec.ServiceType = v1alpha1.ServiceTypeNodePort
	class.Spec.ServiceExternalTrafficPolicy = ptr.To(v1alpha1.TrafficPolicyLocal)
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	svc := reconciletest.GetService(t, ctx, c, ns, "app", func(s *corev1.Service) error {
		if s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			return fmt.Errorf("type %s, traffic policy %s", s.Spec.Type, s.Spec.ExternalTrafficPolicy)
		}
		if s.Annotations["keep"] != "2" || s.Annotations["drop"] != "" {
			return fmt.Errorf("annotations %v, want keep=2 and no drop", s.Annotations)
		}
		return nil
	})
	l = reconciletest.WaitStatus(t, ctx, c, ns, "app", func(l *v1alpha1.Listener) error {
		if l.Status.ServiceType != v1alpha1.ServiceTypeNodePort {
			return fmt.Errorf("service type %s", l.Status.ServiceType)
		}
		return nil
	})
	if got := l.Status.NodePorts["https"]; got == 0 || got != svc.Spec.Ports[0].NodePort {
		t.Errorf("status.nodePorts = %v, want https=%d", l.Status.NodePorts, svc.Spec.Ports[0].NodePort)
	}
	if reason, _ := reconciletest.ReadyReason(l); reason != v1alpha1.ReasonNoNodes {
		t.Errorf("NodePort listener without endpoints: reason %q, want %s", reason, v1alpha1.ReasonNoNodes)
	}
}

func TestOverridePrecedence(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType:        v1alpha1.ServiceTypeClusterIP,
		ServiceAnnotations: map[string]string{"winner": "serviceAnnotations", "from-annotations": "yes"},
		ServiceOverrides:   &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"winner":"serviceOverrides","from-class-overrides":"yes"}},"spec":{"sessionAffinity":"ClientIP"}}`)},
	})
	l := reconciletest.Listener(ns, "ov", class.Name, reconciletest.Port("http", 80))
	l.Spec.ObjectOverrides = []runtime.RawExtension{
		// A Listener may add to what its class decides, not change it
		// (api/validation): its overrides set a key of their own.
		{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"ov","annotations":{"mine":"objectOverrides"}}}`)},
		{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"someone-else","annotations":{"mine":"wrong object"}}}`)},
		{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ov","annotations":{"mine":"wrong kind"}}}`)},
	}
	testenv.Create(t, ctx, c, l)
	reconciletest.WaitReason(t, ctx, c, ns, "ov", v1alpha1.ReasonReady)
	svc := reconciletest.GetService(t, ctx, c, ns, "ov", nil)
	for k, want := range map[string]string{"winner": "serviceOverrides", "mine": "objectOverrides", "from-annotations": "yes", "from-class-overrides": "yes"} {
		if svc.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q (all: %v)", k, svc.Annotations[k], want, svc.Annotations)
		}
	}
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		t.Errorf("sessionAffinity = %q, want ClientIP from the class's serviceOverrides", svc.Spec.SessionAffinity)
	}
}

func TestForeignServiceIsRefused(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns, Labels: map[string]string{"owner": "someone"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}, Selector: map[string]string{"app": "theirs"}},
	}
	testenv.Create(t, ctx, c, foreign)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "taken", class.Name, reconciletest.Port("http", 80)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "taken", v1alpha1.ReasonForeignService)
	if _, ready := reconciletest.ReadyReason(l); ready || len(l.Status.IngressAddresses) != 0 {
		t.Errorf("listener with a foreign service: status %+v, want not ready and no addresses", l.Status)
	}
	svc := reconciletest.GetService(t, ctx, c, ns, "taken", nil)
	if svc.ResourceVersion != foreign.ResourceVersion || len(svc.OwnerReferences) != 0 {
		t.Errorf("foreign service was written to: resourceVersion %s -> %s, owners %v", foreign.ResourceVersion, svc.ResourceVersion, svc.OwnerReferences)
	}
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "taken", v1alpha1.ReasonForeignService)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "not controlled by this Listener") {
		t.Errorf("event = %s %q", ev.Type, ev.Note)
	}

	// Once the Service is gone, the Listener takes the name.
	if err := c.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "taken", v1alpha1.ReasonReady)
}

// TestRefusedServiceIsReported: a Service the API server refuses for a
// reason outside the Listener (here a ResourceQuota on Services; the same
// path takes a full Service IP or node port range) gives the Listener
// Ready=False ServiceRefused with the API server's reason and a Warning
// event, and the Listener gets its Service once the quota allows it.
func TestRefusedServiceIsReported(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-services", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}}
	testenv.Create(t, ctx, c, quota)
	// What kube-controller-manager's quota controller, which does not run
	// here, would write: the admission plugin checks against it.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
	if err := c.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "quota", class.Name, reconciletest.Port("http", 80)))

	l := reconciletest.WaitReason(t, ctx, c, ns, "quota", v1alpha1.ReasonServiceRefused)
	cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	for _, want := range []string{"Service quota", "exceeded quota: no-services", "ResourceQuota"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not say %q", cond.Message, want)
		}
	}
	if len(l.Status.IngressAddresses) != 0 {
		t.Errorf("addresses %+v published without a Service", l.Status.IngressAddresses)
	}
	if ev := reconciletest.WaitEvent(t, ctx, c, ns, "quota", v1alpha1.ReasonServiceRefused); ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s, want Warning", ev.Type)
	}

	// The quota raised: the retries (no event reaches the Listener) create
	// the Service.
	if err := c.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "quota", v1alpha1.ReasonReady)
	reconciletest.GetService(t, ctx, c, ns, "quota", nil)
}

func TestMalformedListenersDoNotStopOthers(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	bad := reconciletest.Listener(ns, "bad", class.Name, reconciletest.Port("http", 80))
	// Valid JSON the API server refuses in a Service.
	bad.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"bad"},"spec":{"sessionAffinity":"Bogus"}}`)}}
	testenv.Create(t, ctx, c, bad,
		reconciletest.Listener(ns, "classless", "no-such-class", reconciletest.Port("http", 80)),
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "unclassed", Namespace: ns}},
		// Admitted without the webhooks: the shared validation rules catch it.
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "dup-ports", Namespace: ns}, Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To(class.Name), Ports: []v1alpha1.ListenerPort{reconciletest.Port("a", 80), reconciletest.Port("b", 80)}}},
		reconciletest.Listener(ns, "good", class.Name, reconciletest.Port("http", 80)))

	l := reconciletest.WaitReason(t, ctx, c, ns, "bad", v1alpha1.ReasonInvalid)
	if c := l.Status.Conditions[0]; !strings.Contains(c.Message, "Bogus") {
		t.Errorf("invalid listener message %q does not say what was refused", c.Message)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "classless", v1alpha1.ReasonClassNotFound)
	reconciletest.WaitReason(t, ctx, c, ns, "unclassed", v1alpha1.ReasonNoClass)
	dup := reconciletest.WaitReason(t, ctx, c, ns, "dup-ports", v1alpha1.ReasonInvalid)
	if msg := dup.Status.Conditions[0].Message; !strings.Contains(msg, "spec.ports") {
		t.Errorf("invalid ports message %q does not name the field", msg)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "good", v1alpha1.ReasonReady)
	reconciletest.WaitEvent(t, ctx, c, ns, "classless", v1alpha1.ReasonClassNotFound)

	// The class appearing later is picked up.
	late := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "no-such-class"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	testenv.Create(t, ctx, c, late)
	t.Cleanup(func() { _ = c.Delete(ctx, late) })
	reconciletest.WaitReason(t, ctx, c, ns, "classless", v1alpha1.ReasonReady)
}

func TestLongNamesAndStaleServices(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	long := "a-listener-name-that-is-much-longer-than-a-service-name-may-be.with-dots"
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, long, class.Name, reconciletest.Port("http", 80)))
	l := reconciletest.WaitReason(t, ctx, c, ns, long, v1alpha1.ReasonReady)
	if l.Status.ServiceName != names.ServiceName(long) || len(l.Status.ServiceName) > 63 {
		t.Errorf("status.serviceName = %q, want %q", l.Status.ServiceName, names.ServiceName(long))
	}
	reconciletest.GetService(t, ctx, c, ns, l.Status.ServiceName, nil)

	// A Service this Listener controls under another name is removed.
	stale := &corev1.Service{
		// With the label every Service of the operator carries (the
		// reconcilers cache only those).
		ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: ns, Labels: map[string]string{LabelName: LabelNameValue}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: long, UID: l.UID, Controller: ptr.To(true),
		}}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}},
	}
	testenv.Create(t, ctx, c, stale)
	testenv.Converges(t, "stale service deleted", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(stale), &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
}

func TestNodePortAddressesFollowPodsAndPinnedVolumes(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	n1 := reconciletest.Node(t, ctx, c, ns+"-n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.1"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"})
	n2 := reconciletest.Node(t, ctx, c, ns+"-n2", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.2"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.2"})
	reconciletest.Node(t, ctx, c, ns+"-n3", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.3"})
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	l := reconciletest.Listener(ns, "np", class.Name, reconciletest.Port("http", 80))
	l.Spec.PublishNotReadyAddresses = ptr.To(false)
	testenv.Create(t, ctx, c, l)
	reconciletest.WaitReason(t, ctx, c, ns, "np", v1alpha1.ReasonNoNodes)
	svc := reconciletest.GetService(t, ctx, c, ns, "np", nil)
	nodePort := svc.Spec.Ports[0].NodePort

	addrs := func(want ...string) func(*v1alpha1.Listener) error {
		return func(l *v1alpha1.Listener) error {
			var got []string
			for _, a := range l.Status.IngressAddresses {
				if a.Ports["http"] != nodePort {
					return fmt.Errorf("address %s ports %v, want http=%d", a.Address, a.Ports, nodePort)
				}
				got = append(got, a.Address)
			}
			if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
				return fmt.Errorf("addresses %v, want %v", got, want)
			}
			return nil
		}
	}

	// A ready pod of the Listener on n1 and a pod that is not ready on n3.
	a := reconciletest.ListenerClaim(ns, "np-a", map[string]string{v1alpha1.AnnotationListenerName: "np"})
	b := reconciletest.ListenerClaim(ns, "np-b", map[string]string{v1alpha1.AnnotationListenerName: "np"})
	testenv.Create(t, ctx, c, a, b)
	p1 := reconciletest.ServingPod(t, ctx, c, ns, "np-0", n1.Name, true, a.Name)
	p3 := reconciletest.ServingPod(t, ctx, c, ns, "np-1", ns+"-n3", false, b.Name)
	l = reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("10.1.0.1"))
	if reason, ready := reconciletest.ReadyReason(l); !ready {
		t.Errorf("listener with a ready pod: reason %s", reason)
	}

	// A volume of the Listener pinned to n2 adds n2 (its external IP).
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns, Annotations: map[string]string{v1alpha1.AnnotationListenerName: "np"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *reconciletest.ResourceOne()}},
		},
	}
	testenv.Create(t, ctx, c, claim)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: *reconciletest.ResourceOne()},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName:       v1alpha1.StorageClassName,
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data", UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: ns + "-pv"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n2.Name}}},
			}}}},
		},
	}
	testenv.Create(t, ctx, c, pv)
	t.Cleanup(func() { _ = c.Delete(ctx, pv) })
	reconciletest.BindClaim(t, ctx, c, claim, pv.Name)
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("10.1.0.1", "203.0.113.2"))

	// The pod on n1 stops being ready: only the pinned node is left.
	reconciletest.SetPodReady(t, ctx, c, p1, false)
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("203.0.113.2"))

	// Publishing not-ready addresses brings n1 and n3 back.
	if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
		t.Fatal(err)
	}
	l.Spec.PublishNotReadyAddresses = ptr.To(true)
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("10.1.0.1", "10.1.0.3", "203.0.113.2"))

	// A node's address changes.
	if err := c.Get(ctx, client.ObjectKeyFromObject(n1), n1); err != nil {
		t.Fatal(err)
	}
	n1.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.11"}}
	if err := c.Status().Update(ctx, n1); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("10.1.0.11", "10.1.0.3", "203.0.113.2"))

	// The pod on n3 finishes, and the one on n1 goes: the pinned node
	// remains.
	reconciletest.SetPodStatus(t, ctx, c, p3, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("10.1.0.11", "203.0.113.2"))
	if err := c.Delete(ctx, p1, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "np", addrs("203.0.113.2"))
}

func TestLoadBalancerStatusBecomesAddresses(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType:                   v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerClass:             ptr.To("example.test/lb"),
		LoadBalancerAllocateNodePorts: ptr.To(false),
		ServiceExternalTrafficPolicy:  ptr.To(v1alpha1.TrafficPolicyCluster),
	})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "lb", class.Name, reconciletest.Port("http", 80)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "lb", v1alpha1.ReasonAwaitingLoadBalancer)
	if len(l.Status.IngressAddresses) != 0 {
		t.Errorf("addresses before the load balancer exists: %+v", l.Status.IngressAddresses)
	}
	svc := reconciletest.GetService(t, ctx, c, ns, "lb", nil)
	if ptr.Deref(svc.Spec.LoadBalancerClass, "") != "example.test/lb" || ptr.Deref(svc.Spec.AllocateLoadBalancerNodePorts, true) || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("LB service spec: class %v, allocate node ports %v, policy %s", svc.Spec.LoadBalancerClass, svc.Spec.AllocateLoadBalancerNodePorts, svc.Spec.ExternalTrafficPolicy)
	}

	// The load balancer reports a hostname and an IP; the class prefers
	// hostnames (HostnameConservative on LoadBalancer).
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7", Hostname: "lb.example.test"}, {IP: "198.51.100.8"}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	l = reconciletest.WaitReason(t, ctx, c, ns, "lb", v1alpha1.ReasonReady)
	// In the Service's order (the first one is the pods' default-address),
	// and no node ports: the existing operator reads their presence as
	// "node-scoped".
	want := []v1alpha1.ListenerIngress{
		{Address: "lb.example.test", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
		{Address: "198.51.100.8", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 80}},
	}
	if !reflect.DeepEqual(l.Status.IngressAddresses, want) || l.Status.NodePorts != nil {
		t.Errorf("addresses = %+v, node ports %v; want %+v and no node ports", l.Status.IngressAddresses, l.Status.NodePorts, want)
	}
}

// TestServiceRefused: which refusals of a Service become the Listener's
// verdict (and which stay plain retries), with the API server's reason in
// the message.
func TestServiceRefused(t *testing.T) {
	gr := corev1.Resource("services")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewForbidden(gr, "web", fmt.Errorf("exceeded quota: q, requested: services=1, used: services=0, limited: services=0")), true},
		{apierrors.NewInternalError(fmt.Errorf(`failed to allocate a serviceIP for Service "web": range is full`)), true},
		{fmt.Errorf("create service ns/web for listener web: %w", apierrors.NewForbidden(gr, "web", fmt.Errorf("denied by policy"))), true},
		{apierrors.NewConflict(gr, "web", fmt.Errorf("changed")), false},
		{apierrors.NewTimeoutError("slow", 1), false},
		{apierrors.NewNotFound(gr, "web"), false},
		{fmt.Errorf("connection refused"), false},
	} {
		v, ok := serviceRefused("web", tc.err)
		if ok != tc.want {
			t.Errorf("%v: refused %v, want %v", tc.err, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(tc.err, &status) {
			t.Fatalf("%v is not an API status", tc.err)
		}
		if v.ready || v.reason != v1alpha1.ReasonServiceRefused || !strings.Contains(v.message, status.Status().Message) || !strings.Contains(v.message, "Service web") {
			t.Errorf("%v: verdict %+v, want not ready, %s, with the API server's message", tc.err, v, v1alpha1.ReasonServiceRefused)
		}
	}
}
