package listener

import (
	"fmt"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestTenantLabelsGoThroughTheAllowList: labels on a Listener (set at
// creation, later with kubectl label, or handed down from its claim), let
// in without the webhooks, reach its Service only through the class's
// allow-list; what is left out is named in the TenantMetadataAllowed
// condition and a MetadataLeftOut event, and the Listener still serves
// (issue 37, part 1).
func TestTenantLabelsGoThroughTheAllowList(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, LockedServiceFields: []string{"metadata.labels[tier]"}})
	warn := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		TenantMetadata: &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn}})
	stackable := map[string]string{"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "simple-kafka", "app.kubernetes.io/component": "broker",
		"app.kubernetes.io/role-group": "default", "app.kubernetes.io/managed-by": "kafka.stackable.tech_kafkacluster", "stackable.tech/vendor": "Stackable"}
	for _, tc := range []struct {
		name, class string
		labels      map[string]string
		want        map[string]string // on the Service
		absent      []string
		reason      string // of TenantMetadataAllowed; "" absent
	}{
		{"exposure", class.Name, map[string]string{"service.kubernetes.io/service-proxy-name": "elsewhere", "lbipam.cilium.io/pool": "public", "app": "web"},
			map[string]string{"app": "web"}, []string{"service.kubernetes.io/service-proxy-name", "lbipam.cilium.io/pool"}, v1alpha1.ReasonMetadataLeftOut},
		{"locked", class.Name, map[string]string{"tier": "gold"}, nil, []string{"tier"}, v1alpha1.ReasonMetadataLeftOut},
		{"stackable", class.Name, stackable, map[string]string{"app.kubernetes.io/component": "broker", "app.kubernetes.io/role-group": "default", "stackable.tech/vendor": "Stackable",
			LabelManagedBy: v1alpha1.FieldManager, LabelInstance: "stackable"}, nil, ""},
		// Mode Warn keeps a key off the allow-list only on a Service that
		// already carries it; it never adds one (issue 48).
		{"warn", warn.Name, map[string]string{"team.example.com/owner": "a", "lbipam.cilium.io/pool": "public"},
			nil, []string{"team.example.com/owner", "lbipam.cilium.io/pool"}, v1alpha1.ReasonMetadataLeftOut},
		{"warn-only", warn.Name, map[string]string{"team.example.com/owner": "a"}, nil, []string{"team.example.com/owner"}, v1alpha1.ReasonMetadataLeftOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := reconciletest.Listener(ns, tc.name, tc.class, reconciletest.Port("http", 80))
			l.Labels = tc.labels
			testenv.Create(t, ctx, c, l)
			reconciletest.GetService(t, ctx, c, ns, tc.name, serviceLabels(tc.want, tc.absent))
			got := reconciletest.WaitStatus(t, ctx, c, ns, tc.name, tenantCondition(tc.reason, tc.absent))
			if r, _ := reconciletest.ReadyReason(got); r != v1alpha1.ReasonReady {
				t.Errorf("Ready reason %s: labels left out must not stop the Listener serving", r)
			}
			if tc.reason == v1alpha1.ReasonMetadataLeftOut {
				ev := reconciletest.WaitEvent(t, ctx, c, ns, tc.name, EventMetadataLeftOut)
				for _, k := range tc.absent {
					if !strings.Contains(ev.Note, k) {
						t.Errorf("event %q does not name %s", ev.Note, k)
					}
				}
			}
		})
	}

	t.Run("kubectl label later", func(t *testing.T) {
		l := reconciletest.Listener(ns, "relabelled", class.Name, reconciletest.Port("http", 80))
		testenv.Create(t, ctx, c, l)
		reconciletest.GetService(t, ctx, c, ns, l.Name, serviceLabels(nil, nil))
		patch := []byte(`{"metadata":{"labels":{"tier":"gold","lbipam.cilium.io/pool":"public","team":"a"}}}`)
		if err := c.Patch(ctx, l, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		reconciletest.GetService(t, ctx, c, ns, l.Name, serviceLabels(map[string]string{"team": "a"}, []string{"tier", "lbipam.cilium.io/pool"}))
		reconciletest.WaitStatus(t, ctx, c, ns, l.Name, tenantCondition(v1alpha1.ReasonMetadataLeftOut, []string{"tier", "lbipam.cilium.io/pool"}))
	})

	t.Run("a claim's labels", func(t *testing.T) {
		claim := reconciletest.ListenerClaim(ns, "kafka-0-listener", map[string]string{v1alpha1.AnnotationListenerClass: class.Name})
		claim.Labels = map[string]string{"app": "kafka", "lbipam.cilium.io/pool": "public"}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "kafka-0", Namespace: ns},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "example", Ports: []corev1.ContainerPort{{Name: "kafka", ContainerPort: 9092}}}},
				Volumes:    []corev1.Volume{reconciletest.ClaimVolume("listener", claim.Name)},
			},
		}
		testenv.Create(t, ctx, c, claim, pod)
		name := names.ClaimListenerName(claim.Name)
		reconciletest.GetService(t, ctx, c, ns, names.ServiceName(name), serviceLabels(map[string]string{"app": "kafka"}, []string{"lbipam.cilium.io/pool"}))
		reconciletest.WaitStatus(t, ctx, c, ns, name, tenantCondition(v1alpha1.ReasonMetadataLeftOut, []string{"lbipam.cilium.io/pool"}))
	})
}

func serviceLabels(want map[string]string, absent []string) func(*corev1.Service) error {
	return func(svc *corev1.Service) error {
		for k, v := range want {
			if svc.Labels[k] != v {
				return fmt.Errorf("labels %v, want %s=%s", svc.Labels, k, v)
			}
		}
		for _, k := range absent {
			if _, ok := svc.Labels[k]; ok {
				return fmt.Errorf("labels %v: %s reached the Service", svc.Labels, k)
			}
		}
		return nil
	}
}

func tenantCondition(reason string, keys []string) func(*v1alpha1.Listener) error {
	return func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionTenantMetadataAllowed)
		if reason == "" {
			if cond != nil {
				return fmt.Errorf("condition %+v, want none", cond)
			}
			if _, ok := reconciletest.ReadyReason(l); !ok {
				return fmt.Errorf("not reconciled yet")
			}
			return nil
		}
		if cond == nil || cond.Reason != reason || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("condition %+v, want False %s", cond, reason)
		}
		for _, k := range keys {
			if !strings.Contains(cond.Message, k) {
				return fmt.Errorf("condition %q does not name %s", cond.Message, k)
			}
		}
		return nil
	}
}
