package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// write, with the keys the class locks, the keys it sets itself, and (for
// mode Warn) the keys the Listener's Service carries now.
type tenantRule struct {
	class       string
	mode        v1alpha1.TenantMetadataMode
	labels      []string // the class's patterns, besides WorkloadKeys
	annotations []string
	locked      locked
	// own are the keys the class sets itself (spec.serviceAnnotations, the
	// metadata of spec.serviceOverrides), by kind: a key off the allow-list
	// never replaces one of them, in any mode.
	own     map[string]map[string]bool
	carried Carried
}

// Carried are the labels and annotations a Listener's Service carries now
// (CarriedBy), of which only the keys count: mode Warn keeps a key off the
// allow-list only there. The zero value carries nothing (a Service not
// made yet). The maps are read, never written: CarriedBy hands over the
// Service's own, so that a reconcile of a class in mode Enforce, which
// never asks, copies nothing.
type Carried struct {
	Labels, Annotations map[string]string
}

// CarriedBy are the keys svc carries, when it is the Service of l (l
// controls it); none when svc is nil or another object's (a Service of a
// Listener deleted and recreated under the same name, a foreign one).
func CarriedBy(l *v1alpha1.Listener, svc *corev1.Service) Carried {
	if svc == nil || !metav1.IsControlledBy(svc, l) {
		return Carried{}
	}
	return Carried{Labels: svc.Labels, Annotations: svc.Annotations}
}

func (c Carried) has(kind, key string) bool {
	m := c.Annotations
	if kind == kindLabels {
		m = c.Labels
	}
	_, ok := m[key]
	return ok
}

// tenantRuleOf is the rule of class, whose serviceOverrides decoded to
// overrides (nil: none), for a Service that carries carried now.
func tenantRuleOf(class *v1alpha1.ListenerClass, lk locked, overrides map[string]any, carried Carried) tenantRule {
	r := tenantRule{class: class.Name, mode: class.Spec.EffectiveTenantMetadataMode(), locked: lk, carried: carried,
		own: map[string]map[string]bool{kindLabels: {}, kindAnnotations: {}}}
	if tm := class.Spec.TenantMetadata; tm != nil {
		r.labels, r.annotations = tm.Labels, tm.Annotations
	}
	for k := range class.Spec.ServiceAnnotations {
		r.own[kindAnnotations][k] = true
	}
	meta, _ := overrides["metadata"].(map[string]any)
	for _, kind := range []string{kindLabels, kindAnnotations} {
		keys, _ := meta[kind].(map[string]any)
		for k := range keys {
			r.own[kind][k] = true // null too: the class removes it
		}
	}
	return r
}

// warnLeavesOut says why mode Warn does not keep key (of kind), which is
// off the allow-list: "" when it keeps it. Warn is a mode to migrate with:
// it keeps what a Service carries already, never adds a key, and never
// lets one replace what the class sets itself.
func (r tenantRule) warnLeavesOut(kind, key string) string {
	switch {
	case r.own[kind][key]:
		return fmt.Sprintf("is set by ListenerClass %q itself (spec.serviceAnnotations or spec.serviceOverrides), and a key off the allow-list never replaces what the class sets, in any mode", r.class)
	case !r.carried.has(kind, key):
		// What is wrong first, then the fix (an administrator's).
		what, fix := r.unlisted(kind)
		return fmt.Sprintf("%s, and the Service does not carry it: mode Warn keeps such a key only on a Service that carries it already, never adds one; %s", what, fix)
	}
	return ""
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

// tolerates reports whether key (of kind, verdict v) reaches the Service
// only because the class is in mode Warn, and, when Warn leaves it out,
// why (warnLeavesOut).
func (r tenantRule) tolerates(kind, key string, v keyVerdict) (bool, string) {
	if mutantWarnExposure && v == keyExposure {
		v = keyUnlisted
	}
	if v != keyUnlisted || r.mode != v1alpha1.TenantMetadataWarn {
		return false, ""
	}
	if mutantWarnCopies {
		return true, ""
	}
	why := r.warnLeavesOut(kind, key)
	return why == "", why
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
	what, fix := r.unlisted(kind)
	return what + "; " + fix
}

// unlisted is why a key of kind off the allow-list is not the tenant's,
// and how an administrator makes it one.
func (r tenantRule) unlisted(kind string) (what, fix string) {
	return fmt.Sprintf("is not on the %s ListenerClass %q allows tenants to set (unprefixed keys, %s, and the class's spec.tenantMetadata.%s)", kind, r.class, strings.Join(WorkloadKeys, ", "), kind),
		fmt.Sprintf("an administrator allows it by adding the key, or a \"<prefix>/*\" pattern, to spec.tenantMetadata.%s of the class", kind)
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
	var overrides map[string]any
	if o := class.Spec.ServiceOverrides; o != nil && len(o.Raw) > 0 {
		overrides, _ = Decode(o.Raw, true, field.NewPath("spec", "serviceOverrides"))
	}
	// The Listener and its Service are made later: its Service carries
	// nothing yet.
	return addTenantLabels(obj, labels, tenantRuleOf(class, lockedOf(class), overrides, Carried{}))
}
