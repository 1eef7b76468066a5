package webhooks

import (
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
)

// patch collects JSON patch operations on the fields a handler changes, so
// that nothing else in the object (fields this build does not know among
// them) is touched.
type patch []jsonpatch.JsonPatchOperation

func (p *patch) add(path string, value any) {
	*p = append(*p, jsonpatch.JsonPatchOperation{Operation: "add", Path: path, Value: value})
}

// setMapEntry sets key in the map at path (e.g. /metadata/labels), creating
// the map when the object has none. exists says whether the map exists,
// which for the first entry added becomes true.
func (p *patch) setMapEntry(path string, exists *bool, key string, value any) {
	if !*exists {
		p.add(path, map[string]any{key: value})
		*exists = true
		return
	}
	p.add(path+"/"+escape(key), value)
}

// appendTo appends value to the list at path, creating the list when the
// object has none (length -1 says so); the length is updated.
func (p *patch) appendTo(path string, length *int, value any) {
	if *length < 0 {
		p.add(path, []any{value})
		*length = 1
		return
	}
	p.add(path+"/-", value)
	*length++
}

// escape escapes a map key for a JSON pointer (RFC 6901).
func escape(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 4)
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(key[i])
		}
	}
	return b.String()
}

// index is i as a JSON pointer segment.
func index(path string, i int, rest string) string {
	return path + "/" + strconv.Itoa(i) + rest
}
