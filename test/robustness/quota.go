package robustness

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/listener"
)

// quotaName is the ResourceQuota a PutQuota makes in a tenant's namespace.
const quotaName = "robust-quota"

// Quota is the ResourceQuota that caps a namespace holding svcs at what it
// has: no new Service, no new node port, no new load balancer. Its status
// is what kube-controller-manager's quota controller would write (the
// quota admission plugin checks against it); that controller does not run
// here, so a Service deleted under the cap does not free room: only
// LiftQuota does, which keeps when a held-back Listener gets its Service
// the administrator's doing.
func Quota(ns string, svcs []corev1.Service) *corev1.ResourceQuota {
	var nodePorts, lbs int64
	for _, svc := range svcs {
		switch svc.Spec.Type {
		case corev1.ServiceTypeLoadBalancer:
			lbs++
			fallthrough
		case corev1.ServiceTypeNodePort:
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					nodePorts++
				}
			}
		}
	}
	hard := corev1.ResourceList{
		corev1.ResourceServices:              *resource.NewQuantity(int64(len(svcs)), resource.DecimalSI),
		corev1.ResourceServicesNodePorts:     *resource.NewQuantity(nodePorts, resource.DecimalSI),
		corev1.ResourceServicesLoadBalancers: *resource.NewQuantity(lbs, resource.DecimalSI),
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: quotaName, Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: hard.DeepCopy()},
	}
}

// applyQuota does PutQuota and LiftQuota as the administrator.
func (c *Cluster) applyQuota(ctx context.Context, w World, op Op) error {
	ns := w.Tenants[op.Tenant]
	if op.Kind == LiftQuota {
		err := client.IgnoreNotFound(c.Admin.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: quotaName, Namespace: ns}}))
		delete(c.quotas, ns)
		if err != nil {
			return err
		}
		return c.awaitHeal(ctx, ns)
	}
	var svcs corev1.ServiceList
	if err := c.Admin.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
		return err
	}
	want := Quota(ns, svcs.Items)
	status := want.Status
	if err := put(ctx, c.Admin, want, func(have, want *corev1.ResourceQuota) { have.Spec = want.Spec }); err != nil {
		return err
	}
	want.Status = status
	if err := c.Admin.Status().Update(ctx, want); err != nil {
		return err
	}
	if c.quotas == nil {
		c.quotas = map[string]bool{}
	}
	c.quotas[ns] = true
	return nil
}

// awaitHeal waits, at most healBound, until no Listener of namespace ns
// says a Service of its was refused: the quota is gone, and the operator
// tries again each listener.ServiceRefusedRecheck. Whatever still says so then is judged by
// RefusalsHealWhenLifted.
func (c *Cluster) awaitHeal(ctx context.Context, ns string) error {
	deadline := time.Now().Add(healBound)
	for time.Now().Before(deadline) {
		var ls v1alpha1.ListenerList
		if err := c.Admin.List(ctx, &ls, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(serviceRefused(ls.Items)) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// healBound is how long the operator has, once a quota is lifted, to give
// the Listeners it held back their Services: two of its rechecks.
const healBound = 2 * listener.ServiceRefusedRecheck

// serviceRefused are the names of the Listeners of ls whose Ready says
// the API server refused their Service.
func serviceRefused(ls []v1alpha1.Listener) []string {
	var out []string
	for i := range ls {
		if c := meta.FindStatusCondition(ls[i].Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == v1alpha1.ReasonServiceRefused && ls[i].DeletionTimestamp == nil {
			out = append(out, ls[i].Name)
		}
	}
	return out
}

// RefusalsHealWhenLifted: once the administrator lifted a tenant's quota
// (and the operator had healBound to retry), no Listener of that tenant
// still says its Service was refused.
func RefusalsHealWhenLifted(st Step) []string {
	if st.Op.Kind != LiftQuota {
		return nil
	}
	if held := serviceRefused(st.Cur.Listeners[st.Op.Tenant]); len(held) > 0 {
		return []string{fmt.Sprintf("the quota of %s was lifted %s ago, and Listeners %s still say their Service is refused", st.Cur.World.Tenants[st.Op.Tenant], healBound, strings.Join(held, ", "))}
	}
	return nil
}

// withoutRetries are the writes of ws, made over span, but the
// operator's rechecks of a Service a standing quota refuses, and the
// retries of a claim's own Listener that the webhook refuses (its class
// does not take the pods' ports; found by make robustness: a pod admitted
// while the webhooks were off, then its class made a gateway class),
// which it retries with backoff until the class allows it. A refused
// write changes nothing; RefusedWritesVisible judges what the Listener
// says of it. A refused Service is tried again once each
// listener.ServiceRefusedRecheck: refusedRechecks of it over span are
// left out, and any more stay (a loop).
func (c *Cluster) withoutRetries(ws []testenv.Write, span time.Duration) []testenv.Write {
	var out []testenv.Write
	rechecks := map[string]int{}
	for _, x := range ws {
		if x.Resource == "services" && x.Code == 403 && c.quotas[x.Namespace] {
			key := x.Namespace + "/" + x.Name
			if rechecks[key]++; rechecks[key] <= refusedRechecks(span) {
				continue
			}
		}
		if x.Resource == "listeners" && x.Code >= 400 && x.Code != 404 && x.Code != 409 {
			continue
		}
		out = append(out, x)
	}
	return out
}

// refusedRechecks is how many times a refused Service may be written over
// span: once each listener.ServiceRefusedRecheck, and a first time.
func refusedRechecks(span time.Duration) int {
	return 1 + int(span/listener.ServiceRefusedRecheck)
}
