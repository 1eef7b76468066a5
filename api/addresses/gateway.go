package addresses

import "github.com/listener-operator/listener-operator/api/v1alpha1"

// GatewayIngress is the address a Listener of a gateway class publishes:
// the name its class gives it, reached through the Gateway, with the
// Gateway listener's port for each Listener port. Empty (nothing to
// publish yet) without a name or ports.
func GatewayIngress(host string, ports map[string]int32) []v1alpha1.ListenerIngress {
	if host == "" || len(ports) == 0 {
		return nil
	}
	return []v1alpha1.ListenerIngress{{Address: host, AddressType: v1alpha1.AddressTypeHostname, Ports: ports}}
}
