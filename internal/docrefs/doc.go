// Package docrefs finds what the project's documentation names in the
// tree, so that a test can check it exists: file paths (in links and in
// code), anchors of links into other documents, and `make` targets. A doc
// that names a file or target that was renamed or removed then fails the
// tests instead of sending a reader nowhere.
package docrefs
