package names

import (
	"k8s.io/apimachinery/pkg/util/validation"
)

// RouteName is the name of the TLSRoute of port port of the Listener named
// listener (a gateway class's Listener gets one route per port). Routes
// share a namespace with every other Listener's, and a Listener's name may
// hold every character a route's may (dots and dashes): "<listener>-<port>"
// of Listener "web" was Listener "web-tls"'s own. So the port, a DNS label
// (no dot), is the name's last DNS label, after a dot: distinct Listener
// and port pairs give distinct names. A name that would be longer than 253
// characters is one DNS label instead (no dot, so it is no other pair's):
// the Listener's name cut short, with a hash of both (hashed).
func RouteName(listener, port string) string {
	if n := listener + "." + port; len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	return hashed(listener, listener+"/"+port, validation.DNS1123LabelMaxLength, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	})
}

// ListenerLabelValue is the value of a label that names the Listener named
// listener (v1alpha1.LabelRouteListener on its routes). A Listener's name
// may have 253 characters and a label value 63: a longer name is cut short
// with a hash, as ServiceName does. The label only narrows a list: readers
// check the owner reference of what they find.
func ListenerLabelValue(listener string) string {
	if len(validation.IsValidLabelValue(listener)) == 0 {
		return listener
	}
	return hashed(listener, listener, validation.LabelValueMaxLength, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_'
	})
}
