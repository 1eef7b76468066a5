package addresses

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Placeholders of a ListenerClass's spec.hostname.template.
const (
	PlaceholderListener  = "{listener}"
	PlaceholderNamespace = "{namespace}"
)

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// TemplateProblems lists what is wrong with a hostname template, each as a
// sentence that says how to fix it: unknown placeholders, a missing
// {namespace} (unless allowWithoutNamespace), and a result that cannot be
// a DNS name whatever the Listener is called (checked with one-character
// names; longer names are checked when rendered).
func TemplateProblems(p *v1alpha1.HostnamePolicy) []string {
	var problems []string
	for _, ph := range placeholder.FindAllString(p.Template, -1) {
		if ph != PlaceholderListener && ph != PlaceholderNamespace {
			problems = append(problems, fmt.Sprintf("unknown placeholder %s: use %s and %s", ph, PlaceholderListener, PlaceholderNamespace))
		}
	}
	if !strings.Contains(p.Template, PlaceholderNamespace) && (p.AllowWithoutNamespace == nil || !*p.AllowWithoutNamespace) {
		problems = append(problems, fmt.Sprintf("must contain %s, so that two namespaces cannot claim one DNS name (set allowWithoutNamespace: true if only one namespace uses this class)", PlaceholderNamespace))
	}
	if len(problems) > 0 {
		return problems
	}
	if _, err := RenderHostname(p, "a", "a"); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// RenderHostname is the hostname the class's policy gives the Listener
// named listener in namespace: the template with its placeholders
// replaced, which must be a DNS-1123 subdomain (at most 253 characters,
// labels of at most 63).
func RenderHostname(p *v1alpha1.HostnamePolicy, listener, namespace string) (string, error) {
	host := strings.NewReplacer(PlaceholderListener, listener, PlaceholderNamespace, namespace).Replace(p.Template)
	if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		return "", fmt.Errorf("hostname %q is not a DNS name: %s", host, strings.Join(msgs, "; "))
	}
	for _, label := range strings.Split(host, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return "", fmt.Errorf("hostname %q is not a DNS name: label %q is longer than %d characters", host, label, validation.DNS1123LabelMaxLength)
		}
	}
	return host, nil
}

// Hostname is the hostname class gives the Listener named listener in
// namespace, or "" when the class publishes none or the result is not a
// DNS name (the reconciler says why).
func Hostname(class *v1alpha1.ListenerClassSpec, listener, namespace string) string {
	if class == nil || class.Hostname == nil {
		return ""
	}
	host, err := RenderHostname(class.Hostname, listener, namespace)
	if err != nil {
		return ""
	}
	return host
}

// WithHostname puts host first among addrs, as a Hostname address with
// the ports of the first address (the same ports are reachable through
// it). addrs is returned as it is when host is "" or there is no address
// yet (the name resolves to nothing until there is one); a copy of host
// further down the list is dropped.
func WithHostname(host string, addrs []v1alpha1.ListenerIngress) []v1alpha1.ListenerIngress {
	if host == "" || len(addrs) == 0 {
		return addrs
	}
	out := []v1alpha1.ListenerIngress{{Address: host, AddressType: v1alpha1.AddressTypeHostname, Ports: addrs[0].Ports}}
	for _, a := range addrs {
		if a.Address != host {
			out = append(out, a)
		}
	}
	return out
}
