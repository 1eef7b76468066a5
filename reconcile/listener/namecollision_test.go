package listener

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestLaterNameCollisionGetsNoService (issue 37, case 6): a Listener named
// like another's shortened pod selector label or Service name, let in while
// the webhooks were down (they refuse it), would get a Service selecting
// the other's pods (or find the other's Service). The later one is Invalid,
// with the webhook's message, and has no Service; the first keeps its
// Service; once the first is deleted, the later one gets its own.
func TestLaterNameCollisionGetsNoService(t *testing.T) {
	long := strings.Repeat("a", 61)
	label := names.PodSelectorLabel(long)
	for _, tc := range []struct{ name, first, later, want string }{
		{"pod selector label", long, strings.TrimPrefix(label, v1alpha1.PodSelectorLabelPrefix),
			fmt.Sprintf(`Listener %q already selects its pods by the label %q, which this name would get too; choose another name`, long, label)},
		{"Service name", "web.shop", names.ServiceName("web.shop"),
			fmt.Sprintf(`Listener "web.shop" already has the Service name %q, which this name would get too; choose another name`, names.ServiceName("web.shop"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ctx, ns := reconciletest.Setup(t)
			c := e.Client
			class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
			first := reconciletest.Listener(ns, tc.first, class.Name, reconciletest.Port("http", 8080))
			testenv.Create(t, ctx, c, first)
			reconciletest.WaitReason(t, ctx, c, ns, first.Name, v1alpha1.ReasonReady)
			firstSvc := reconciletest.GetService(t, ctx, c, ns, names.ServiceName(first.Name), nil)
			// Created in a later second: creation timestamps have seconds.
			time.Sleep(time.Until(first.CreationTimestamp.Add(time.Second)))
			later := reconciletest.Listener(ns, tc.later, class.Name, reconciletest.Port("http", 8080))
			testenv.Create(t, ctx, c, later)

			l := reconciletest.WaitReason(t, ctx, c, ns, later.Name, v1alpha1.ReasonInvalid)
			if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, tc.want) {
				t.Errorf("Ready message %q lacks %q", msg, tc.want)
			}
			var svcs corev1.ServiceList
			if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, s := range svcs.Items {
				if lookup.ControlledByListener(&s) == later.Name {
					t.Errorf("the later Listener has Service %s selecting %v", s.Name, s.Spec.Selector)
				}
			}
			if got := reconciletest.WaitReason(t, ctx, c, ns, first.Name, v1alpha1.ReasonReady); got.Status.ServiceName != firstSvc.Name {
				t.Errorf("first Listener's Service %q, want %q", got.Status.ServiceName, firstSvc.Name)
			}
			now := reconciletest.GetService(t, ctx, c, ns, firstSvc.Name, nil)
			if !maps.Equal(now.Spec.Selector, firstSvc.Spec.Selector) || now.UID != firstSvc.UID {
				t.Errorf("first Listener's Service changed: %v (uid %s), was %v (uid %s)", now.Spec.Selector, now.UID, firstSvc.Spec.Selector, firstSvc.UID)
			}

			if err := c.Delete(ctx, first); err != nil {
				t.Fatal(err)
			}
			testenv.Converges(t, "first Listener gone", func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(first), first); !apierrors.IsNotFound(err) {
					return fmt.Errorf("still there: %v", err)
				}
				return nil
			})
			reconciletest.WaitReason(t, ctx, c, ns, later.Name, v1alpha1.ReasonReady)
		})
	}
}
