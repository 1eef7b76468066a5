package ports

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// UnnamedPrefix names a container port that has no name: port-<number>.
const UnnamedPrefix = "port-"

// key is what a Service port must be unique by.
type key struct {
	port  int32
	proto corev1.Protocol
}

// FromPods is the port list of a per-claim Listener whose claim the pods
// mount. Only Running pods count. The result is sorted by name and valid
// for a Service (names and number/protocol pairs unique):
//
//   - a port is identified by its number and protocol (default TCP);
//   - a number declared under several names keeps the alphabetically first
//     name; a declared name wins over an unnamed declaration, which is
//     otherwise named port-<number>;
//   - a name declared with different numbers (two pods of different
//     versions) keeps the number of the first pod by name;
//   - a generated name already taken (port-53 for both TCP and UDP) keeps
//     the first declaration in pod-name and container order.
//
// The same pods always give the same ports, whatever order they come in.
func FromPods(pods []corev1.Pod) []v1alpha1.ListenerPort {
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	byName := map[string]v1alpha1.ListenerPort{}
	var unnamed []key
	for i := range pods {
		if !podstate.Running(&pods[i]) {
			continue
		}
		for _, p := range declared(&pods[i]) {
			if p.Name == "" {
				unnamed = append(unnamed, key{p.Port, p.Protocol})
				continue
			}
			if _, dup := byName[p.Name]; !dup {
				byName[p.Name] = p
			}
		}
	}
	// One name per number and protocol: the alphabetically first.
	owner := map[key]string{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		p := byName[name]
		k := key{p.Port, p.Protocol}
		if _, taken := owner[k]; taken {
			delete(byName, name)
			continue
		}
		owner[k] = name
	}
	for _, k := range unnamed {
		name := UnnamedPrefix + strconv.Itoa(int(k.port))
		if _, taken := owner[k]; taken {
			continue
		}
		if _, taken := byName[name]; taken {
			continue
		}
		owner[k] = name
		byName[name] = v1alpha1.ListenerPort{Name: name, Port: k.port, Protocol: k.proto}
	}
	if len(byName) == 0 {
		return nil
	}
	out := slices.Collect(maps.Values(byName))
	slices.SortFunc(out, func(a, b v1alpha1.ListenerPort) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Uncovered lists, as "<number>/<protocol>", the ports the pod's containers
// declare that have no entry of the same number and protocol in listener,
// in declaration order. A pod whose ports are all covered gives nil.
func Uncovered(listener []v1alpha1.ListenerPort, pod *corev1.Pod) []string {
	have := map[key]bool{}
	for _, p := range listener {
		have[key{p.Port, cmp.Or(p.Protocol, corev1.ProtocolTCP)}] = true
	}
	var out []string
	for _, p := range declared(pod) {
		if k := (key{p.Port, p.Protocol}); !have[k] {
			have[k] = true
			out = append(out, strconv.Itoa(int(p.Port))+"/"+string(p.Protocol))
		}
	}
	return out
}

// declared are a pod's container ports with the protocol defaulted; the
// name is empty for unnamed ports.
func declared(pod *corev1.Pod) []v1alpha1.ListenerPort {
	var out []v1alpha1.ListenerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			out = append(out, v1alpha1.ListenerPort{Name: p.Name, Port: p.ContainerPort, Protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP)})
		}
	}
	return out
}
