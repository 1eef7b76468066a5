package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// MaxOverrideBytes bounds one override (a Listener's objectOverrides item
// or a class's serviceOverrides), so that decoding it allocates a bounded
// amount: the CRD schema bounds how many overrides a Listener has (32) but
// cannot measure an embedded object. A Service override of the existing
// operator's users is a few hundred bytes; 32 KiB leaves room for large
// annotation values (certificates, JSON policies).
const MaxOverrideBytes = 32 << 10

// topLevel are the keys an override may have.
var topLevel = []string{"apiVersion", "kind", "metadata", "spec"}

// Decode reads one override (a Listener's objectOverrides item, or a
// class's serviceOverrides) strictly and returns it as a JSON object whose
// integers are int64. An override of a v1 Service (or, with isService, any
// override) must decode as a Service: unknown fields at any depth, keys
// that differ from a field only by case (including Unicode folding, e.g.
// the Kelvin sign K for "kind"), duplicate keys and values of the wrong
// type are refused. Other overrides need only a known top level
// (apiVersion, kind, metadata, spec) and no duplicate keys.
func Decode(raw []byte, isService bool, path *field.Path) (map[string]any, field.ErrorList) {
	if len(raw) > MaxOverrideBytes {
		return nil, field.ErrorList{field.TooLong(path, "", MaxOverrideBytes)}
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, field.ErrorList{field.Invalid(path, short(raw), `must be a JSON object, a partial object such as {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "..."}, "spec": {...}}`)}
	}
	var head struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	strict, err := kjson.UnmarshalStrict(raw, &head)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, short(raw), decodeFix(err))}
	}
	if errs := strictErrors(strict, path); len(errs) > 0 {
		return nil, errs
	}
	if isService || head.APIVersion == "v1" && head.Kind == "Service" {
		var svc corev1.Service
		strict, err := kjson.UnmarshalStrict(raw, &svc)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(path, short(raw), decodeFix(err))}
		}
		if errs := strictErrors(strict, path); len(errs) > 0 {
			return nil, errs
		}
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, field.ErrorList{field.Invalid(path, short(raw), `must be a JSON object, e.g. {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "..."}}`)}
	}
	return obj, nil
}

// strictErrors turns the strict decoder's findings (unknown or duplicate
// fields) into errors that name the field and say what to do.
func strictErrors(strict []error, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, e := range strict {
		msg := e.Error()
		switch {
		case strings.HasPrefix(msg, "duplicate field "):
			name := unquote(strings.TrimPrefix(msg, "duplicate field "))
			errs = append(errs, field.Duplicate(pathOf(path, name), "the key appears twice; remove one of them (every key is read once, case-sensitively)"))
		case strings.HasPrefix(msg, "unknown field "):
			name := unquote(strings.TrimPrefix(msg, "unknown field "))
			errs = append(errs, field.Forbidden(pathOf(path, name), unknownFix(name)))
		default:
			errs = append(errs, field.Invalid(path, "", msg))
		}
	}
	return errs
}

// unknownFix says what to do about an unknown key: fix its case when it
// folds to a known one, remove it otherwise.
func unknownFix(name string) string {
	parts := strings.Split(name, ".")
	last := parts[len(parts)-1]
	if len(parts) == 1 {
		for _, k := range topLevel {
			if strings.EqualFold(k, last) {
				return fmt.Sprintf("unknown key (keys are case-sensitive); rename it to %q, or remove it if %q is there already", k, k)
			}
		}
		return fmt.Sprintf("unknown key; remove it (an override has only %s)", strings.Join(topLevel, ", "))
	}
	return "not a field of a v1 Service (keys are case-sensitive); remove it or fix its spelling"
}

func decodeFix(err error) string {
	return fmt.Sprintf("%v; fix or remove the value: an override is a partial object of the right types, e.g. {\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"...\"}, \"spec\": {...}}", err)
}

func pathOf(base *field.Path, dotted string) *field.Path {
	p := base
	for _, s := range strings.Split(dotted, ".") {
		p = p.Child(s)
	}
	return p
}

func unquote(s string) string {
	var out string
	if json.Unmarshal([]byte(s), &out) == nil {
		return out
	}
	return strings.Trim(s, `"`)
}

// short is a bounded rendering of raw input for a message.
func short(raw []byte) string {
	const max = 200
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}
