package service

import (
	"fmt"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// enforce resets, in obj, every field an override at path p may not change
// to what it was before the Listener's overrides (base), and returns a
// refusal for each; in mode Warn, keys off the allow-list that the Service
// carries already stay and are returned as tolerated, the others are reset
// too and returned as left out (warnLeavesOut).
func enforce(obj, base map[string]any, rule tenantRule, p *field.Path) (refused, leftOut, tolerated field.ErrorList) {
	spec := child(obj, "spec")
	made := child(base, "spec")
	for _, key := range sortedKeys(SpecFields) {
		if SpecFields[key] != Exposure && !rule.locked.spec[key] {
			continue
		}
		if !reflect.DeepEqual(spec[key], made[key]) {
			why := "is exposure (who can reach the pods, and on which address)"
			if SpecFields[key] != Exposure {
				why = "is locked by the class (spec.lockedServiceFields)"
			}
			refused = append(refused, field.Forbidden(p.Child("spec", key), refusal("spec."+key, why, rule.class)))
			restore(spec, made, key)
		}
	}
	refused = append(refused, checkPorts(spec, made, rule.class, p)...)
	// Fields of the spec the override added that are not Service fields at
	// all cannot occur: Decode refused them.
	meta := child(obj, "metadata")
	madeMeta := child(base, "metadata")
	for _, key := range sortedKeys(MetadataFields) {
		if MetadataFields[key] != Operator || key == "name" || key == "namespace" || key == "ownerReferences" {
			continue // name, namespace and owner are set after the merge
		}
		if !reflect.DeepEqual(meta[key], madeMeta[key]) {
			refused = append(refused, field.Forbidden(p.Child("metadata", key), fmt.Sprintf("metadata.%s of a Listener's Service is the operator's; remove it from the override", key)))
			restore(meta, madeMeta, key)
		}
	}
	for _, kind := range []string{kindAnnotations, kindLabels} {
		r, l, t := checkKeys(meta, madeMeta, kind, rule, p)
		refused, leftOut, tolerated = append(refused, r...), append(leftOut, l...), append(tolerated, t...)
	}
	return refused, leftOut, tolerated
}

// checkKeys holds every key of the annotations or labels (kind) that an
// override changed, added or removed to what it was before the overrides,
// unless the class allows tenants to set it (or, in mode Warn, the
// Service carries it already).
func checkKeys(meta, made map[string]any, kind string, rule tenantRule, p *field.Path) (refused, leftOut, tolerated field.ErrorList) {
	have, _ := meta[kind].(map[string]any)
	want, _ := made[kind].(map[string]any)
	keys := map[string]bool{}
	for k := range have {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		hv, hok := have[k]
		wv, wok := want[k]
		if hok == wok && reflect.DeepEqual(hv, wv) {
			continue
		}
		v := rule.judge(kind, k)
		path := p.Child("metadata", kind).Key(k)
		kept, why := rule.tolerates(kind, k, v)
		switch {
		case v == keyAllowed:
			continue
		case kept:
			tolerated = append(tolerated, field.Forbidden(path, tolerance(kind, k, rule)))
			continue
		case why != "":
			leftOut = append(leftOut, field.Forbidden(path, fmt.Sprintf("metadata.%s[%s] of the objectOverrides does not reach the Service: it %s (the Listener is admitted: ListenerClass %q is in spec.tenantMetadata.mode: Warn); remove it from the Listener's objectOverrides", kind, k, why, rule.class)))
		default:
			refused = append(refused, field.Forbidden(path, keyRefusal(kind, k, v, rule)))
		}
		if have == nil {
			have = map[string]any{}
		} else {
			have = maps.Clone(have)
		}
		if wok {
			have[k] = wv
		} else {
			delete(have, k)
		}
		meta[kind] = have
	}
	return refused, leftOut, tolerated
}

// keyRefusal is the message of an override's key that the class does not
// let a tenant set: the key, why, the class and the fix.
func keyRefusal(kind, key string, v keyVerdict, rule tenantRule) string {
	f := fmt.Sprintf("metadata.%s[%s]", kind, key)
	switch v {
	case keyOperators:
		return fmt.Sprintf("%s %s; remove it from the Listener's objectOverrides", f, rule.why(kind, v))
	case keyUnlisted:
		return fmt.Sprintf("%s %s; or remove it from the Listener's objectOverrides", f, rule.why(kind, v))
	case keyExposure:
		if kind == kindLabels {
			return refusal(f, "is an exposure label (it makes a load balancer or proxy pick the Service up, or chooses its pool)", rule.class)
		}
		return refusal(f, "is an exposure annotation (it picks a load balancer's scheme, network or address pool)", rule.class)
	}
	return refusal(f, "is locked by the class (spec.lockedServiceFields)", rule.class)
}

// tolerance is the warning for a key off the allow-list that mode Warn
// copies.
func tolerance(kind, key string, rule tenantRule) string {
	return fmt.Sprintf("metadata.%s[%s] reaches the Service only because ListenerClass %q is in spec.tenantMetadata.mode: Warn; it %s", kind, key, rule.class, rule.why(kind, keyUnlisted))
}

// refusal is the message of a refused override field: the field, why it is
// the class's, the class, and the fix.
func refusal(f, why, class string) string {
	return fmt.Sprintf("%s %s and is decided by ListenerClass %q (cluster policy), not by a Listener; remove it from the Listener's objectOverrides, or ask an administrator for a ListenerClass that sets it", f, why, class)
}

// addTenantLabels puts on obj the labels of the Listener's own metadata
// that the class lets reach the Service, and says which it left out (or,
// in mode Warn, copied although they are off the allow-list). The
// operator's own keys are superseded without a word, as they always were.
func addTenantLabels(obj map[string]any, labels map[string]string, rule tenantRule) (leftOut, tolerated field.ErrorList) {
	into := child(child(obj, "metadata"), "labels")
	for _, k := range sortedKeys(labels) {
		v := rule.judge(kindLabels, k)
		path := field.NewPath("metadata", "labels").Key(k)
		kept, why := rule.tolerates(kindLabels, k, v)
		if why == "" {
			why = rule.why(kindLabels, v)
		}
		switch {
		case v == keyOperators:
			continue
		case v == keyAllowed:
		case kept:
			tolerated = append(tolerated, field.Forbidden(path, tolerance(kindLabels, k, rule)))
		default:
			leftOut = append(leftOut, field.Forbidden(path, fmt.Sprintf(
				"the Listener's label %s does not reach its Service: it %s (it stays on the Listener; to set it on the Service, use a key the class allows)", k, why)))
			continue
		}
		into[k] = labels[k]
	}
	return leftOut, tolerated
}
