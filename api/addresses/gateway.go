package addresses

import (
	"slices"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

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

// SectionAddress is what one port of a Listener of a TCPRoute class
// publishes: its section's Gateway address and the section's port.
type SectionAddress struct {
	Port        string
	Address     string
	AddressType v1alpha1.AddressType
	SectionPort int32
}

// TCPGatewayIngress is the addresses a Listener of a TCPRoute class
// publishes: each Gateway address its sections have (in the order of its
// ports), with each port's section port. Sections of one Gateway give one
// address.
func TCPGatewayIngress(sections []SectionAddress) []v1alpha1.ListenerIngress {
	var out []v1alpha1.ListenerIngress
	for _, s := range sections {
		i := slices.IndexFunc(out, func(ing v1alpha1.ListenerIngress) bool {
			return ing.Address == s.Address && ing.AddressType == s.AddressType
		})
		if i < 0 {
			out = append(out, v1alpha1.ListenerIngress{Address: s.Address, AddressType: s.AddressType, Ports: map[string]int32{}})
			i = len(out) - 1
		}
		out[i].Ports[s.Port] = s.SectionPort
	}
	return out
}
