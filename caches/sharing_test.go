package caches

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// unsafeRead is the read option that shares the cached object.
var unsafeRead = regexp.MustCompile(`client\.UnsafeDisableDeepCopy([^O]|$)`)

// TestReadsAreCopies: no code of the operator reads a cache with
// client.UnsafeDisableDeepCopy. The caches hold maps and strings that many
// objects share (intern.go): a read that shared them with the cache would
// let one write change many cached objects.
func TestReadsAreCopies(t *testing.T) {
	root := testenv.RepoRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "bin" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if unsafeRead.Match(src) {
			t.Errorf("%s reads a cache with client.UnsafeDisableDeepCopy: read a copy (the default)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
