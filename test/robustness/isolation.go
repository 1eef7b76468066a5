package robustness

import (
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TenantStaysInItsNamespace: an operation of one tenant changes nothing of
// the other's Listeners (addresses, node ports) and their Services (type,
// ports, node ports, labels, annotations, identity). A Listener that
// waited for something two namespaces share (a hostname another Listener
// published first, a node-port range that was full) may gain it when the
// other tenant lets go; that is the one exception.
func TenantStaysInItsNamespace(st Step) []string {
	if !isTenantOp(st.Op.Kind) || st.Prev == nil {
		return nil
	}
	o := 1 - st.Op.Tenant
	var out []string
	for _, before := range st.Prev.Listeners[o] {
		if before.DeletionTimestamp != nil || contended(&before) {
			continue
		}
		who := fmt.Sprintf("tenant %d's %v changed Listener %s/%s", st.Op.Tenant, st.Op.Kind, before.Namespace, before.Name)
		after := st.Cur.listener(o, before.Name)
		if after == nil || after.UID != before.UID {
			out = append(out, who+": it is gone")
			continue
		}
		if !reflect.DeepEqual(before.Status.IngressAddresses, after.Status.IngressAddresses) {
			out = append(out, fmt.Sprintf("%s: addresses %v, were %v", who, after.Status.IngressAddresses, before.Status.IngressAddresses))
		}
		if !maps.Equal(before.Status.NodePorts, after.Status.NodePorts) {
			out = append(out, fmt.Sprintf("%s: node ports %v, were %v", who, after.Status.NodePorts, before.Status.NodePorts))
		}
		if name := before.Status.ServiceName; name != "" {
			out = append(out, sameService(who, st.Prev.service(o, name), st.Cur.service(o, name))...)
		}
	}
	return out
}

// contended says whether l waited, before the operation, for something
// Listeners of several namespaces share.
func contended(l *v1alpha1.Listener) bool {
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished); c != nil && c.Reason == v1alpha1.ReasonHostnameConflict {
		return true
	}
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == v1alpha1.ReasonNodePortRangeExhausted
}

// sameService says how after differs from before in what a client of the
// Service notices.
func sameService(who string, before, after *corev1.Service) []string {
	switch {
	case before == nil:
		return nil
	case after == nil || after.UID != before.UID:
		return []string{fmt.Sprintf("%s: its Service %s was deleted or replaced", who, before.Name)}
	}
	var out []string
	if before.Spec.Type != after.Spec.Type {
		out = append(out, fmt.Sprintf("%s: Service type %s, was %s", who, after.Spec.Type, before.Spec.Type))
	}
	if !reflect.DeepEqual(before.Spec.Ports, after.Spec.Ports) {
		out = append(out, fmt.Sprintf("%s: Service ports %v, were %v", who, after.Spec.Ports, before.Spec.Ports))
	}
	if !maps.Equal(before.Labels, after.Labels) || !maps.Equal(before.Annotations, after.Annotations) {
		out = append(out, fmt.Sprintf("%s: Service metadata labels %v annotations %v, were %v %v", who, after.Labels, after.Annotations, before.Labels, before.Annotations))
	}
	return out
}

// serviceByUID is tenant t's Service with svc's UID in s (nil s: none).
func (s *Snapshot) serviceByUID(t int, svc *corev1.Service) *corev1.Service {
	if s == nil {
		return nil
	}
	for i := range s.Services[t] {
		if s.Services[t][i].UID == svc.UID {
			return &s.Services[t][i]
		}
	}
	return nil
}
