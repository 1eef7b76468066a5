//go:build tools

// Package kwok pins kwok, which `make scale` runs out of cluster to give the
// local cluster fake nodes (docs/benchmarks.md, "Scale (kwok)").
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
