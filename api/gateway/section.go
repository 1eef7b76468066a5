package gateway

import (
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Section is what a gateway class needs to know of one Gateway listener.
type Section struct {
	Port     int32
	Hostname string // the listener's hostname ("" admits every name)
}

// CheckSection finds the listener p.SectionName of Gateway gw and says what
// keeps it from carrying a gateway class's routes: it must exist, speak
// TLS with tls.mode Passthrough (the pods terminate TLS themselves), and
// admit TLSRoutes. problem names the Gateway, the section and the fix.
func CheckSection(gw *gwv1.Gateway, p v1alpha1.GatewayParentRef) (s Section, problem string) {
	l, where, problem := findSection(gw, p, "")
	if problem != "" {
		return s, problem
	}
	s = Section{Port: int32(l.Port)}
	if l.Hostname != nil {
		s.Hostname = string(*l.Hostname)
	}
	fix := fmt.Sprintf("give listener %q of %s protocol: TLS, tls.mode: Passthrough and allowedRoutes.kinds that include TLSRoute, or name another listener in the class's spec.gateway.parentRefs", p.SectionName, where)
	switch {
	case l.Protocol != gwv1.TLSProtocolType:
		return s, fmt.Sprintf("listener %q of %s has protocol %s, and a gateway class's TLSRoutes attach only to protocol TLS; %s", p.SectionName, where, l.Protocol, fix)
	case l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode != gwv1.TLSModePassthrough:
		mode := gwv1.TLSModeTerminate // the Gateway API's default
		if l.TLS != nil && l.TLS.Mode != nil {
			mode = *l.TLS.Mode
		}
		return s, fmt.Sprintf("listener %q of %s has tls.mode %s, and a gateway class needs Passthrough: its pods serve TLS with their own certificates; %s", p.SectionName, where, mode, fix)
	case !admitsKind(l.AllowedRoutes, "TLSRoute"):
		return s, fmt.Sprintf("listener %q of %s does not admit TLSRoutes (allowedRoutes.kinds); %s", p.SectionName, where, fix)
	}
	return s, ""
}

// HostnameMatches reports whether a Gateway listener's hostname (exact, or
// "*.suffix" for names under suffix; "" for any) admits host.
func HostnameMatches(listenerHost, host string) bool {
	switch {
	case listenerHost == "":
		return true
	case strings.HasPrefix(listenerHost, "*."):
		suffix := listenerHost[1:]
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return strings.EqualFold(listenerHost, host)
}

func quoteAll(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// findSection finds the listener p.SectionName of Gateway gw; where names
// the Gateway, problem says that there is none and what to add (the
// listener, with what: e.g. " (protocol: TCP)").
func findSection(gw *gwv1.Gateway, p v1alpha1.GatewayParentRef, what string) (l gwv1.Listener, where, problem string) {
	where = fmt.Sprintf("Gateway %s/%s", gw.Namespace, gw.Name)
	i := slices.IndexFunc(gw.Spec.Listeners, func(l gwv1.Listener) bool { return string(l.Name) == p.SectionName })
	if i < 0 {
		var have []string
		for _, l := range gw.Spec.Listeners {
			have = append(have, string(l.Name))
		}
		return l, where, fmt.Sprintf("%s has no listener named %q (it has %s); add that listener%s to the Gateway, or fix the class's spec.gateway.parentRefs",
			where, p.SectionName, quoteAll(have), what)
	}
	return gw.Spec.Listeners[i], where, ""
}
