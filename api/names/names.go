package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	base := strings.ToLower(listenerName)
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "l-" + base
	}
	return hashed(base, listenerName, validation.DNS1035LabelMaxLength, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	})
}

// PodSelectorLabel is the label key that pods of the Listener named
// listenerName carry (with value v1alpha1.PodSelectorLabelValue) and that its
// Service selects on. It derives from the name, not the UID, because the pod
// webhook labels pods at admission, before a per-claim Listener may exist.
// Names that do not fit a label key are shortened with a hash, as ServiceName
// does.
func PodSelectorLabel(listenerName string) string {
	const mnt = "mnt."
	if plainLabelName(mnt, listenerName) || len(validation.IsQualifiedName(v1alpha1.PodSelectorLabelPrefix+listenerName)) == 0 {
		return v1alpha1.PodSelectorLabelPrefix + listenerName
	}
	return v1alpha1.PodSelectorLabelPrefix + hashed(mnt+listenerName, listenerName, validation.LabelValueMaxLength, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_'
	})[len(mnt):]
}

// plainLabelName reports, without the regular expression of
// validation.IsQualifiedName (half of the pod webhook's labelling,
// BenchmarkPodWebhookServing), that prefix+name is the name part of a label
// key as it is: lower-case letters, digits, '-' and '.', ending in a letter
// or digit, 63 characters at most. prefix starts with a letter. false
// decides nothing: IsQualifiedName is asked then (TestPlainLabelName).
func plainLabelName(prefix, name string) bool {
	if name == "" || len(prefix)+len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '.') && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// hashed turns base into a name of at most maxLen characters that keeps only
// the runes keep allows (others become '-') and ends in a hash of original,
// so that distinct originals never share a result.
func hashed(base, original string, maxLen int, keep func(rune) bool) string {
	sum := sha256.Sum256([]byte(original))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	var b strings.Builder
	for _, r := range base {
		if b.Len() >= maxLen-len(suffix) {
			break
		}
		if keep(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.TrimRight(b.String(), "-._") + suffix
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

// EphemeralClaimName is the name Kubernetes gives the claim of a pod's
// generic ephemeral volume: <pod>-<volume>.
func EphemeralClaimName(podName, volumeName string) string {
	return podName + "-" + volumeName
}

// PodVolume names a volume of a pod.
type PodVolume struct {
	Pod, Volume string
}

// EphemeralClaimSources are the pod volumes whose generic ephemeral
// volume's claim would be named claim (EphemeralClaimName): one for each
// "-" in it that leaves both names non-empty. Which of them is the claim's
// only the pods can tell.
func EphemeralClaimSources(claim string) []PodVolume {
	var out []PodVolume
	for i := 1; i < len(claim)-1; i++ {
		if claim[i] == '-' {
			out = append(out, PodVolume{Pod: claim[:i], Volume: claim[i+1:]})
		}
	}
	return out
}

// VolumeClaim is a volume of a pod backed by a claim, and the claim.
type VolumeClaim struct {
	Volume, Claim string
}

// PodVolumeClaims lists a pod's volumes that are backed by claims: named
// claims, and generic ephemeral volumes, whose claim is
// EphemeralClaimName (not while the pod has no name yet, as at admission
// with generateName).
func PodVolumeClaims(pod *corev1.Pod) []VolumeClaim {
	var out []VolumeClaim
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, VolumeClaim{v.Name, v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil && pod.Name != "":
			out = append(out, VolumeClaim{v.Name, EphemeralClaimName(pod.Name, v.Name)})
		}
	}
	return out
}

// PodClaimNames are the names of the claims of PodVolumeClaims.
func PodClaimNames(pod *corev1.Pod) []string {
	vcs := PodVolumeClaims(pod)
	if len(vcs) == 0 {
		return nil
	}
	out := make([]string, len(vcs))
	for i, vc := range vcs {
		out[i] = vc.Claim
	}
	return out
}

// SelectsPodByName reports whether a Listener's Service selects the pod by
// its StatefulSet pod-name label, so that the pod needs no per-Listener
// label. statefulSetPod is the Listener's v1alpha1.AnnotationStatefulSetPod
// (or, while the Listener does not exist yet, claims.StatefulSetPod of its
// claim: the Listener will be made with it).
func SelectsPodByName(statefulSetPod, podName string, podLabels map[string]string) bool {
	return statefulSetPod != "" && statefulSetPod == podName && podLabels[v1alpha1.LabelStatefulSetPodName] == podName
}
