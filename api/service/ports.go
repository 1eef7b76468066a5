package service

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// openPortFields are the fields of a Service port that an override may
// set: how the port is spoken and where in the pod it lands. Its name,
// port, protocol and nodePort are the Listener's declaration (and the
// node port the operator keeps): they decide what is opened, and where.
var openPortFields = []string{"appProtocol", "targetPort"}

// declaredPorts are the Service ports of a Listener's declared ports.
func declaredPorts(ports []v1alpha1.ListenerPort) []any {
	out := make([]any, 0, len(ports))
	for _, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, map[string]any{
			"name":       p.Name,
			"port":       int64(p.Port),
			"targetPort": int64(p.Port),
			"protocol":   string(proto),
		})
	}
	return out
}

// portsFrom are the Service's ports by construction: each declared port
// once, in the declared order, with the open fields that the merged
// overrides (have) give the port of that name.
func portsFrom(declared, have []any) []any {
	byName := map[any]map[string]any{}
	for _, h := range have {
		if m, ok := h.(map[string]any); ok {
			if _, dup := byName[m["name"]]; !dup {
				byName[m["name"]] = m
			}
		}
	}
	out := make([]any, 0, len(declared))
	for _, d := range declared {
		port := maps.Clone(d.(map[string]any))
		if h := byName[port["name"]]; h != nil {
			for _, f := range openPortFields {
				if v, ok := h[f]; ok {
					port[f] = v
				}
			}
		}
		out = append(out, port)
	}
	return out
}

// checkPorts refuses an override's spec.ports that add, remove or repeat a
// port, or change a port's number, protocol or node port: a port opens an
// address (and, for NodePort and LoadBalancer, a port on every node). The
// Service's ports are rebuilt from the declaration afterwards (portsFrom).
func checkPorts(spec, made map[string]any, class string, p *field.Path) field.ErrorList {
	have, want := sliceOf(spec["ports"]), sliceOf(made["ports"])
	if reflect.DeepEqual(have, want) {
		return nil
	}
	declared := map[any]map[string]any{}
	var names []string
	for _, w := range want {
		if m, ok := w.(map[string]any); ok {
			declared[m["name"]] = m
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	path := p.Child("spec", "ports")
	var errs field.ErrorList
	var added []string
	seen := map[any]bool{}
	for i, h := range have {
		m, _ := h.(map[string]any)
		d, ok := declared[m["name"]]
		if !ok || seen[m["name"]] {
			added = append(added, fmt.Sprint(m["name"]))
			continue
		}
		seen[m["name"]] = true
		for _, f := range []string{"port", "protocol", "nodePort"} {
			if v, set := m[f]; set && !reflect.DeepEqual(v, d[f]) {
				errs = append(errs, field.Forbidden(path.Index(i).Child(f), portRefusal(fmt.Sprintf("changes %s of port %v", f, m["name"]), names, class)))
			}
		}
	}
	if len(added) > 0 {
		errs = append(errs, field.Forbidden(path, portRefusal(fmt.Sprintf("adds %d port(s) (%s)", len(added), bounded(added)), names, class)))
	}
	var removed []string
	for _, n := range names {
		if !seen[n] {
			removed = append(removed, n)
		}
	}
	if len(removed) > 0 {
		errs = append(errs, field.Forbidden(path, portRefusal("removes port(s) "+bounded(removed), names, class)))
	}
	return errs
}

func portRefusal(what string, names []string, class string) string {
	return fmt.Sprintf("spec.ports of a Listener's Service are exactly the Listener's spec.ports (%s), and the override %s; an override may set only %s of a declared port, under its name. Declare ports in the Listener's spec.ports, or remove them from the objectOverrides (ListenerClass %q)",
		bounded(names), what, strings.Join(openPortFields, " and "), class)
}

// bounded lists names for a message, at most 5 of them.
func bounded(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
	}
	return strings.Join(names, ", ")
}
