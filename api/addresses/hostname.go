package addresses

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
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
// labels of at most 63). A name that is too long is a
// *HostnameTooLongError.
func RenderHostname(p *v1alpha1.HostnamePolicy, listener, namespace string) (string, error) {
	host := strings.NewReplacer(PlaceholderListener, listener, PlaceholderNamespace, namespace).Replace(p.Template)
	if len(host) > validation.DNS1123SubdomainMaxLength {
		return "", &HostnameTooLongError{Host: host, Length: len(host), Limit: validation.DNS1123SubdomainMaxLength}
	}
	for _, label := range strings.Split(host, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return "", &HostnameTooLongError{Host: host, Label: label, Length: len(label), Limit: validation.DNS1123LabelMaxLength}
		}
	}
	if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		return "", fmt.Errorf("hostname %q is not a DNS name: %s", host, strings.Join(msgs, "; "))
	}
	return host, nil
}

// HostnameTooLongError says that a rendered hostname is too long for DNS:
// the whole name (Label empty) or one of its labels.
type HostnameTooLongError struct {
	Host   string // the rendered name
	Label  string // the label that is too long; "" when the whole name is
	Length int    // the length of Host, or of Label
	Limit  int    // 253 for a name, 63 for a label
}

func (e *HostnameTooLongError) Error() string {
	if e.Label != "" {
		return fmt.Sprintf("hostname %q is not a DNS name: label %q is longer than %d characters (%d)", e.Host, e.Label, e.Limit, e.Length)
	}
	return fmt.Sprintf("hostname %q is not a DNS name: it has %d characters, and a DNS name must be no more than %d characters", e.Host, e.Length, e.Limit)
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

// ListenerHostname is the hostname Listener l publishes under class: the
// class's (Hostname), unless l's status says that another Listener
// publishes it (HostnamePublished False, reason HostnameConflict). The
// reconciler decides that for the Listener's status and Service; its pods'
// addresses (PodListeners, the volume) follow the status.
func ListenerHostname(class *v1alpha1.ListenerClassSpec, l *v1alpha1.Listener) string {
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished); c != nil && c.Reason == v1alpha1.ReasonHostnameConflict {
		return ""
	}
	return Hostname(class, l.Name, l.Namespace)
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
