package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// hashLen is how many hex digits of a SHA-256 keep shortened names apart.
// 10 digits (40 bits) make an accidental collision among the Listeners of
// one namespace vanishingly unlikely.
const hashLen = 10

// ServiceName is the name of the Service that backs the Listener named
// listenerName. Listener names are DNS subdomains (up to 253 characters, dots
// allowed, may start with a digit) but Service names must be DNS-1035 labels,
// so a name that is not one already is rewritten into one and suffixed with a
// hash of the original: stable across restarts and distinct for distinct
// Listeners.
func ServiceName(listenerName string) string {
	if len(validation.IsDNS1035Label(listenerName)) == 0 {
		return listenerName
	}
	var b strings.Builder
	for _, r := range strings.ToLower(listenerName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	base := b.String()
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "l-" + base
	}
	sum := sha256.Sum256([]byte(listenerName))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	if max := validation.DNS1035LabelMaxLength - len(suffix); len(base) > max {
		base = base[:max]
	}
	return strings.TrimRight(base, "-") + suffix
}

// PodSelectorLabel is the label that pods of the Listener with this UID carry
// and that its Service selects on. Deriving it from the UID keeps the key
// within the 63-character limit whatever the Listener's name, and a Listener
// deleted and recreated under the same name never selects stale pods.
func PodSelectorLabel(listenerUID types.UID) string {
	return v1alpha1.PodSelectorLabelPrefix + string(listenerUID)
}

// PodListenersName is the name of the PodListeners object of the pod with
// this UID.
func PodListenersName(podUID types.UID) string {
	return v1alpha1.PodListenersNamePrefix + string(podUID)
}

// ClaimListenerName is the name of the Listener created for a claim that asks
// for a listener class: the claim's own name, in the claim's namespace.
func ClaimListenerName(claimName string) string {
	return claimName
}
