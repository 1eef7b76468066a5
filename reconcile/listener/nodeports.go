package listener

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/api/service"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// EventNodePortsTaken: a Service created anew could not get back some of
// the node ports its Listener recorded.
const EventNodePortsTaken = "NodePortsTaken"

var nodePortField = regexp.MustCompile(`^spec\.ports\[(\d+)\]\.nodePort$`)

// refusedNodePorts are the indexes of the ports whose requested node port
// the API server refused (taken by another Service, or outside the
// cluster's node port range); nil when err is not such a refusal.
func refusedNodePorts(err error) []int {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var idx []int
	for _, c := range status.Status().Details.Causes {
		if m := nodePortField.FindStringSubmatch(c.Field); m != nil {
			i, _ := strconv.Atoi(m[1])
			idx = append(idx, i)
		}
	}
	return idx
}

// createStickyService creates the Listener's Service anew: for a class
// with a node port range, its block there (writeInRange, noderange.go);
// otherwise, when the class keeps node ports, asking for the ones the
// Listener recorded (service.ForCreation). A recorded port the API server
// refuses is asked for again for a moment, then given up for one the API
// server picks. The Listener then gets an event and the NodePortsKept
// condition False (in l's status in memory: the status write that
// publishes the new ports carries it).
func (r *listenerReconciler) createStickyService(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, want *unstructured.Unstructured) (*corev1.Service, error) {
	if nodePortRange(class) != nil {
		return r.writeInRange(ctx, l, class, want, nil)
	}
	requested := l.Status.NodePorts
	req, asked := service.ForCreation(want, class, requested)
	if len(asked) == 0 {
		return r.createService(ctx, l, want)
	}
	var taken []string
	refusals := 0
	for {
		svc, err := r.createService(ctx, l, req)
		idx := refusedNodePorts(err)
		if err == nil || len(idx) == 0 {
			if err == nil {
				r.noteNodePorts(l, svc, taken, nil)
			}
			return svc, err
		}
		// The API server frees a deleted Service's node ports just after
		// the deletion is visible: a Service recreated at once can be
		// refused ports that are about to be free. Ask again for a moment
		// before giving them up.
		if refusals++; refusals <= nodePortRetries {
			if err := pause(ctx); err != nil {
				return nil, err
			}
			continue
		}
		refusals = 0
		dropped := service.DropNodePorts(req, idx, asked)
		if len(dropped) == 0 {
			return nil, err
		}
		for _, name := range dropped {
			taken = append(taken, fmt.Sprintf("%s=%d", name, requested[name]))
		}
	}
}

// pause waits nodePortRetryDelay before a refused node port is asked for
// again.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(nodePortRetryDelay):
		return nil
	}
}

// nodePortRetries and nodePortRetryDelay bound how long a Service created
// anew keeps asking for recorded node ports that the API server refuses
// (about a second) before it takes new ones.
const (
	nodePortRetries    = 5
	nodePortRetryDelay = 200 * time.Millisecond
)

// noteNodePorts records on l (in memory) and by an event whether the
// Service got the node ports it asked for: the recorded ones, or its place
// in node port range rng (nil: none); taken are the ones it did not get
// ("name=port").
func (r *listenerReconciler) noteNodePorts(l *v1alpha1.Listener, svc *corev1.Service, taken []string, rng *v1alpha1.NodePortRange) {
	cond := metav1.Condition{Type: v1alpha1.ConditionNodePortsKept, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNodePortsKept,
		Message: fmt.Sprintf("Service %s was created anew with the node ports recorded in status.nodePorts", svc.Name), ObservedGeneration: l.Generation}
	if len(taken) > 0 {
		was := slices.Compact(slices.Sorted(slices.Values(taken)))
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNodePortsTaken
		cond.Message = fmt.Sprintf("Service %s was created anew, but the recorded node ports %s are taken or out of range: it got new ones (clients must use the new status.nodePorts)", svc.Name, strings.Join(was, ", "))
		if rng != nil {
			cond.Message = fmt.Sprintf("Service %s asked for the node ports %s of its place in range %s, but another Service holds them: it got the next free ones of the range (kubectl get service %s)", svc.Name, strings.Join(was, ", "), rng, svc.Name)
		}
		r.recorder.Eventf(l, svc, corev1.EventTypeWarning, EventNodePortsTaken, "Create", "%s", cond.Message)
	}
	l.Status.Conditions = conditions.Set(l.Status.Conditions, cond, time.Now())
}
