// Package docrefs finds what the project's documentation names in the
// tree, so that a test can check it exists: file paths (in links and in
// code), anchors of links into other documents, and `make` targets. A doc
// that names a file or target that was renamed or removed then fails the
// tests instead of sending a reader nowhere.
//
// Its tests check the other way too: the README's Layout table has a row
// for every directory of Go files (layout_test.go), and every file a
// doc.go names exists, a doc.go that lists its package's files listing
// them all; and the Makefile defines every variable a rule's targets or
// prerequisites name above that rule (makefile_test.go), where make reads
// it.
package docrefs
