package main

import (
	"sort"
	"strings"
	"unicode"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// describeCRD returns the owned-CRD entry of each served version, with a
// spec descriptor for every field under spec (what a user sets) and a
// status descriptor for every field under status, walked from the schema,
// so that a new field gets its descriptor without anyone remembering to.
func describeCRD(crd *apiextensionsv1.CustomResourceDefinition) []v1alpha1.CRDDescription {
	var out []v1alpha1.CRDDescription
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		root := v.Schema.OpenAPIV3Schema
		d := v1alpha1.CRDDescription{
			Name:        crd.Name,
			Version:     v.Name,
			Kind:        crd.Spec.Names.Kind,
			DisplayName: words(crd.Spec.Names.Kind),
			Description: firstSentence(root.Description),
		}
		if s, ok := root.Properties["spec"]; ok {
			walk("", s, func(path string, p apiextensionsv1.JSONSchemaProps) {
				d.SpecDescriptors = append(d.SpecDescriptors, v1alpha1.SpecDescriptor{
					Path: path, DisplayName: words(lastSegment(path)), Description: firstSentence(p.Description), XDescriptors: xDescriptors(p),
				})
			})
		}
		if s, ok := root.Properties["status"]; ok {
			walk("", s, func(path string, p apiextensionsv1.JSONSchemaProps) {
				d.StatusDescriptors = append(d.StatusDescriptors, v1alpha1.StatusDescriptor{
					Path: path, DisplayName: words(lastSegment(path)), Description: firstSentence(p.Description),
				})
			})
		}
		out = append(out, d)
	}
	return out
}

// walk calls f for every property below s, depth first in name order;
// list items are addressed as path[0] (the descriptor path syntax).
func walk(prefix string, s apiextensionsv1.JSONSchemaProps, f func(string, apiextensionsv1.JSONSchemaProps)) {
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		walk(prefix+"[0]", *s.Items.Schema, f)
		return
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		path := n
		if prefix != "" {
			path = prefix + "." + n
		}
		f(path, p)
		walk(path, p, f)
	}
}

// xDescriptors: the console widget of a field.
func xDescriptors(p apiextensionsv1.JSONSchemaProps) []string {
	switch {
	case len(p.Enum) > 0:
		var out []string
		for _, e := range p.Enum {
			out = append(out, "urn:alm:descriptor:com.tectonic.ui:select:"+strings.Trim(string(e.Raw), `"`))
		}
		return out
	case p.Type == "boolean":
		return []string{"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	case p.Type == "integer" || p.Type == "number":
		return []string{"urn:alm:descriptor:com.tectonic.ui:number"}
	case p.Type == "string":
		return []string{"urn:alm:descriptor:com.tectonic.ui:text"}
	}
	return nil
}

func lastSegment(path string) string {
	path = strings.TrimSuffix(path, "[0]")
	if i := strings.LastIndex(path, "."); i >= 0 {
		path = path[i+1:]
	}
	return strings.TrimSuffix(path, "[0]")
}

// words turns camelCase into "Camel Case".
func words(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i == 0 {
			r = unicode.ToUpper(r)
		} else if unicode.IsUpper(r) && !unicode.IsUpper(rune(s[i-1])) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// firstSentence keeps the console's descriptions short.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
