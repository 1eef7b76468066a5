package robustness

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podready"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// GatedPodsReadyOnlyWhenReachable: every pod that carries the readiness
// gate (its class had spec.podReadiness Gate when the pod was admitted),
// is bound to a node and mounts a listener volume that uses a Listener has
// the gate's condition, and it is api/podready's verdict computed from
// the API server's objects (each volume's Listener and its Ready condition
// for its generation, its class, addresses.ForPod, and what the pod's
// PodListeners recorded): the same status, reason and message (a refused
// PodListeners write adds the refusal to AddressesNotRecorded's message).
// So the condition is True only when every volume is reachable as the pod
// was told, and its message names no other namespace.
func GatedPodsReadyOnlyWhenReachable(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Pods {
		other := s.World.Tenants[1-t]
		for i := range s.Pods[t] {
			pod := &s.Pods[t][i]
			if !gatedPod(pod) || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || podstate.Finished(pod) {
				continue
			}
			vols, ok := s.gateVolumes(t, pod)
			if !ok || len(vols) == 0 {
				continue // a claim not made or not bound to a Listener yet: no verdict to agree with
			}
			want := podready.Judge(vols)
			where := fmt.Sprintf("gated pod %s/%s", pod.Namespace, pod.Name)
			got := gateCondition(pod)
			switch {
			case got == nil:
				out = append(out, fmt.Sprintf("%s has no %s condition; podready says %s: %s", where, v1alpha1.PodConditionAddressesReady, want.Reason, want.Message))
			case (got.Status == corev1.ConditionTrue) != want.Ready || got.Reason != want.Reason || !sameVerdictMessage(got.Message, want):
				out = append(out, fmt.Sprintf("%s has %s %s (%s: %s); podready says ready=%t (%s: %s)", where, v1alpha1.PodConditionAddressesReady, got.Status, got.Reason, got.Message, want.Ready, want.Reason, want.Message))
			}
			if got != nil && strings.Contains(got.Message+got.Reason, other) {
				out = append(out, fmt.Sprintf("%s: its condition names namespace %s: %s", where, other, got.Message))
			}
		}
	}
	return out
}

// sameVerdictMessage: the condition's message is the verdict's, or, for
// AddressesNotRecorded, the verdict's followed by why the API server
// refused the PodListeners write (podready.Refused).
func sameVerdictMessage(got string, want podready.Verdict) bool {
	if want.Reason == v1alpha1.ReasonAddressesNotRecorded {
		return strings.HasPrefix(got, want.Message)
	}
	return got == want.Message
}

// gatedPod: pod carries the operator's readiness gate.
func gatedPod(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == v1alpha1.PodConditionAddressesReady
	})
}

// gateCondition is the pod's readiness-gate condition, or nil.
func gateCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1alpha1.PodConditionAddressesReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// gateVolumes are what podready judges of tenant t's pod, from the
// snapshot: its listener volumes in the pod's order, each with its
// Listener, class, what ForPod tells it (or why it waits) and what its
// PodListeners recorded. ok is false when ForPod fails for a reason other
// than waiting (the operator retries; there is no verdict to compare).
func (s *Snapshot) gateVolumes(t int, pod *corev1.Pod) ([]podready.Volume, bool) {
	var recorded map[string]v1alpha1.PodListener
	if pls := s.podListeners(t, pod.UID); pls != nil {
		recorded = pls.Spec.Listeners
	}
	var vols []podready.Volume
	for _, vc := range names.PodVolumeClaims(pod) {
		claim := s.claim(t, vc.Claim)
		if claim == nil {
			continue
		}
		use, ok := claims.OfClaim(claim)
		if !ok {
			continue
		}
		pv := s.Volumes[claim.Spec.VolumeName]
		bound := claims.Bound(claim, use, pv)
		if bound.Listener == "" {
			continue
		}
		v := podready.Volume{Name: vc.Volume}
		if e, ok := recorded[vc.Volume]; ok {
			v.Recorded = &e
		}
		vols = append(vols, v)
		l := s.listener(t, bound.Listener)
		if l == nil {
			continue
		}
		vols[len(vols)-1].Listener, vols[len(vols)-1].Class = l, s.classOf(l)
		vol := addresses.Volume{PerClaim: bound.Own, Claim: client.ObjectKeyFromObject(claim), ClaimUID: claim.UID, Name: claim.Spec.VolumeName}
		if pv != nil {
			vol.Name = pv.Name
		}
		now, err := addresses.ForPod(addresses.PodVolume{Pod: pod, Volume: vol, Listener: l, Class: s.classOf(l), Node: s.Nodes[pod.Spec.NodeName]})
		var wait *addresses.Wait
		switch {
		case errors.As(err, &wait):
			vols[len(vols)-1].Pending = wait.Reason
		case err != nil:
			return nil, false
		default:
			vols[len(vols)-1].Now = &now
		}
	}
	return vols, true
}

// addGate counts the gated pods' conditions by reason.
func (c *Coverage) addGate(st Step) {
	for t := range st.Cur.Pods {
		for i := range st.Cur.Pods[t] {
			pod := &st.Cur.Pods[t][i]
			if !gatedPod(pod) {
				continue
			}
			key := "gated pod without condition"
			if cond := gateCondition(pod); cond != nil {
				key = fmt.Sprintf("gated pod %s=%s", cond.Status, cond.Reason)
				c.Messages[key] = cond.Message
			}
			c.States[key]++
		}
	}
}
