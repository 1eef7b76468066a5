package caches

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is one field index of a cached kind: objects of Object's kind are
// found by the values Values returns, with client.MatchingFields{Field: v},
// in a namespace (client.InNamespace) or across all.
type Index struct {
	Object client.Object
	Field  string
	Values client.IndexerFunc
}

// AddIndexes registers indexes with controller-runtime's IndexField. It
// files a namespaced object's values twice (under its namespace and under
// all namespaces); filing each once, in the scope its callers query, took
// keys in controller-runtime's private format and saved 0.1 MB at the
// 1,000-claim mix (docs/benchmarks.md, "Cache tricks"), so it went.
func AddIndexes(ctx context.Context, indexer client.FieldIndexer, indexes ...Index) error {
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.Object, ix.Field, ix.Values); err != nil {
			return fmt.Errorf("index %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}
