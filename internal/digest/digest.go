// Package digest is the short digest the operator stores to tell whether
// what it wrote last is what it would write now (a Service's
// listeners.stackable.tech/service-hash, a PodListeners'
// listeners.stackable.tech/podlisteners-hash): the first 8 bytes of the
// SHA-256 of the value's JSON, in hex. encoding/json writes map keys in
// order, so equal values have equal digests. The digests are stored in
// running clusters: a change of how they are computed rewrites every such
// object once on upgrade (TestJSONGolden).
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// JSON is the digest of v's JSON encoding.
func JSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}
