// Package podstate holds the rules about a pod's lifecycle that several
// consumers ask: whether it has finished, whether it still runs (its
// ports and volumes count), whether it is Ready.
package podstate

import corev1 "k8s.io/api/core/v1"

// Finished reports whether a pod has run to its end (Succeeded or Failed,
// which includes evicted pods).
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Running reports whether a pod still counts as a user of its volumes and
// a declarer of its ports: it has not finished and is not being deleted.
func Running(p *corev1.Pod) bool {
	return p.DeletionTimestamp.IsZero() && !Finished(p)
}

// Ready reports whether a pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
