package gateway

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Served reports whether the API server serves what a gateway class needs:
// gateway.networking.k8s.io/v1 Gateway and TLSRoute. mapper is a
// discovering RESTMapper (controller-runtime's looks a group up again
// when it does not know a kind, so a later install is seen).
func Served(mapper meta.RESTMapper) bool {
	for _, kind := range []string{"Gateway", "TLSRoute"} {
		if _, err := mapper.RESTMapping(schema.GroupKind{Group: Group, Kind: kind}, "v1"); err != nil {
			return false
		}
	}
	return true
}
