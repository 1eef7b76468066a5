package service

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// WorkloadKeys is the built-in allow-list of label and annotation keys a
// tenant may put on a Listener's Service without the class's consent:
// besides every unprefixed key, these describe the workload and who
// deployed it, and no load balancer, proxy or DNS controller acts on them.
// An entry ending in "/*" matches every key under that prefix; any other
// entry matches one key. Stackable's operators put
// app.kubernetes.io/{name,instance,component,role-group,managed-by,version}
// and stackable.tech/vendor on Listeners and claim templates.
var WorkloadKeys = []string{
	"app.kubernetes.io/*",
	"stackable.tech/*",
	"helm.sh/chart",
	"prometheus.io/*",
	// GitOps tools' tracking keys.
	"argocd.argoproj.io/instance",
	"argocd.argoproj.io/tracking-id",
	"kustomize.toolkit.fluxcd.io/name",
	"kustomize.toolkit.fluxcd.io/namespace",
	"helm.toolkit.fluxcd.io/name",
	"helm.toolkit.fluxcd.io/namespace",
}

// operatorLabels are the Service labels the operator sets: a tenant's value
// for one of them never reaches the Service. (A Listener's own labels with
// these keys are simply superseded, as they always were: Stackable's
// operators set them on their Listeners.)
var operatorLabels = map[string]bool{LabelName: true, LabelInstance: true, LabelManagedBy: true}

// Metadata kinds a tenant writes.
const (
	kindLabels      = "labels"
	kindAnnotations = "annotations"
)

// keyVerdict is what the class says about one tenant-written key.
type keyVerdict int

const (
	keyAllowed   keyVerdict = iota
	keyUnlisted             // not on the allow-list: Enforce leaves it out, Warn copies it
	keyExposure             // the class's, in every mode
	keyLocked               // the class's (spec.lockedServiceFields), in every mode
	keyOperators            // the operator's, in every mode
)

// tenantRule is the allow-list of one class for the metadata tenants
// write, with the keys the class locks.
type tenantRule struct {
	class       string
	mode        v1alpha1.TenantMetadataMode
	labels      []string // the class's patterns, besides WorkloadKeys
	annotations []string
	locked      locked
}

func tenantRuleOf(class *v1alpha1.ListenerClass, lk locked) tenantRule {
	r := tenantRule{class: class.Name, mode: class.Spec.EffectiveTenantMetadataMode(), locked: lk}
	if tm := class.Spec.TenantMetadata; tm != nil {
		r.labels, r.annotations = tm.Labels, tm.Annotations
	}
	return r
}

// judge says whether a tenant may set key among the Service's labels or
// annotations (kind). Exposure and locked keys stay the class's even when
// a pattern matches them.
func (r tenantRule) judge(kind, key string) keyVerdict {
	switch {
	case kind == kindLabels && operatorLabels[key]:
		return keyOperators
	case kind == kindLabels && IsExposureLabel(key), kind == kindAnnotations && IsExposureAnnotation(key):
		return keyExposure
	case kind == kindLabels && r.locked.labels[key], kind == kindAnnotations && r.locked.annotations[key]:
		return keyLocked
	case !strings.Contains(key, "/"), matchesAny(WorkloadKeys, key):
		return keyAllowed
	case kind == kindLabels && matchesAny(r.labels, key), kind == kindAnnotations && matchesAny(r.annotations, key):
		return keyAllowed
	}
	return keyUnlisted
}

// copies reports whether a key of verdict v reaches the Service.
func (r tenantRule) copies(v keyVerdict) bool {
	return v == keyAllowed || v == keyUnlisted && r.mode == v1alpha1.TenantMetadataWarn
}

// why is the reason a key of verdict v is not (or, in Warn mode, should
// not be) the tenant's, and the fix.
func (r tenantRule) why(kind string, v keyVerdict) string {
	switch v {
	case keyOperators:
		return fmt.Sprintf("is set by the operator on every Listener's Service, whatever ListenerClass %q says", r.class)
	case keyExposure:
		if kind == kindLabels {
			return fmt.Sprintf("is an exposure label (it makes a load balancer or proxy pick the Service up, or chooses its pool) and is decided by ListenerClass %q (cluster policy), not by a tenant", r.class)
		}
		return fmt.Sprintf("is an exposure annotation (it picks a load balancer's scheme, network or address pool) and is decided by ListenerClass %q (cluster policy), not by a tenant", r.class)
	case keyLocked:
		return fmt.Sprintf("is locked by ListenerClass %q (spec.lockedServiceFields)", r.class)
	}
	return fmt.Sprintf("is not on the %s ListenerClass %q allows tenants to set (unprefixed keys, %s, and the class's spec.tenantMetadata.%s); an administrator allows it by adding the key, or a \"<prefix>/*\" pattern, to spec.tenantMetadata.%s of the class",
		kind, r.class, strings.Join(WorkloadKeys, ", "), kind, kind)
}

// matchesAny reports whether key matches one of patterns: an exact key, or
// "<prefix>/*" for every key under prefix.
func matchesAny(patterns []string, key string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasSuffix(prefix, "/") {
			if strings.HasPrefix(key, prefix) && len(key) > len(prefix) {
				return true
			}
		} else if p == key {
			return true
		}
	}
	return false
}

// PatternProblems says what is wrong with one entry of a class's
// spec.tenantMetadata.labels or .annotations (nil when it is well formed):
// an exact key, or "<prefix>/*". valid checks a key (a qualified name).
func PatternProblems(p string, valid func(string) []string) []string {
	if prefix, ok := strings.CutSuffix(p, "/*"); ok {
		if prefix == "" {
			return []string{`a pattern is "<prefix>/*" with a DNS subdomain as prefix (e.g. "example.com/*"); to allow unprefixed keys, nothing is needed`}
		}
		return valid(prefix + "/x")
	}
	if strings.Contains(p, "*") {
		return []string{`"*" is allowed only as "<prefix>/*" (every key under a prefix); write an exact key or such a pattern`}
	}
	return valid(p)
}

// ExposurePatternWarning says, for a class's pattern that matches exposure
// keys of kind ("labels" or "annotations"), that those stay the class's.
func ExposurePatternWarning(kind, p string) string {
	prefix, ok := strings.CutSuffix(p, "*")
	if !ok {
		if kind == kindLabels && IsExposureLabel(p) || kind == kindAnnotations && IsExposureAnnotation(p) {
			return fmt.Sprintf("spec.tenantMetadata.%s: %q is an exposure key, which stays the class's: tenants cannot set it; remove it", kind, p)
		}
		return ""
	}
	var hits []string
	if kind == kindLabels {
		for _, e := range ExposureLabelPrefixes {
			if strings.HasPrefix(e, prefix) || strings.HasPrefix(prefix, e) {
				hits = append(hits, e+"*")
			}
		}
	} else {
		for _, e := range ExposureAnnotations {
			if strings.HasPrefix(e, prefix) {
				hits = append(hits, e)
			}
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return fmt.Sprintf("spec.tenantMetadata.%s: %q matches exposure keys (%s), which stay the class's: tenants still cannot set those", kind, p, strings.Join(hits, ", "))
}

// TenantLabels says which of labels, on a Listener of class (or handed down
// to it from its claim, claims.ListenerLabels), do not reach its Service,
// and which reach it only because the class is in mode Warn: the rule of
// Service, for an admission warning before the Listener exists.
func TenantLabels(class *v1alpha1.ListenerClass, labels map[string]string) (leftOut, tolerated field.ErrorList) {
	obj := map[string]any{"metadata": map[string]any{"labels": map[string]any{}}}
	return addTenantLabels(obj, labels, tenantRuleOf(class, lockedOf(class)))
}
