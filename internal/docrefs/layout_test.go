package docrefs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goPackageDirs are the directories of the repository that hold Go files,
// slash-separated and relative to root (bin/, hidden directories and
// testdata are not the project's packages).
func goPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "bin" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && path.Dir(rel) != "." {
			seen[path.Dir(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}

// layoutRows reads the README's Layout table: each row's folder (without
// a trailing slash) and the code spans of its description.
func layoutRows(t *testing.T, readme string) map[string][]string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		folder := codeSpan.FindStringSubmatch(cells[1])
		if folder == nil {
			continue
		}
		var spans []string
		for _, m := range codeSpan.FindAllStringSubmatch(strings.Join(cells[2:], "|"), -1) {
			spans = append(spans, strings.TrimSuffix(m[1], "/"))
		}
		rows[strings.TrimSuffix(folder[1], "/")] = spans
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in the README's Layout table: is the parse broken?", len(rows))
	}
	return rows
}

// TestLayoutNamesEveryPackage: every directory of Go files has a row of
// its own in the README's Layout table, or is named (by its path, or by
// its path below that row's folder) in the row of the nearest folder above
// it that has one. A new package without a row fails here.
func TestLayoutNamesEveryPackage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(t, string(raw))
	for _, dir := range goPackageDirs(t, root) {
		if _, ok := rows[dir]; ok {
			continue
		}
		covered := false
		for up := path.Dir(dir); up != "."; up = path.Dir(up) {
			spans, ok := rows[up]
			if !ok {
				continue
			}
			below := strings.TrimPrefix(dir, up+"/")
			covered = slices.Contains(spans, dir) || slices.Contains(spans, below)
			break
		}
		if !covered {
			t.Errorf("README.md's Layout table has no row for %s (nor names it in the row of a folder above it): add one saying what it does", dir)
		}
	}
}

// goFileName is a Go file named in a comment ("tmpfs.go").
var goFileName = regexp.MustCompile(`\b([a-z0-9_]+\.go)\b`)

// TestDocGoNamesFilesThatExist: a Go file a doc.go names is in its package
// (a path with a slash: in the repository); and a doc.go that names at
// least half of its package's other non-test files is its package's file
// list, so it names every one of them. A file added, renamed or removed
// without its doc.go fails here.
func TestDocGoNamesFilesThatExist(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, dir := range goPackageDirs(t, root) {
		raw, err := os.ReadFile(filepath.Join(root, dir, "doc.go"))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && n != "doc.go" {
				files = append(files, n)
			}
		}
		named := map[string]bool{}
		for _, line := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, word := range strings.Fields(line) {
				if p, ok := pathIn(word); ok && strings.HasSuffix(p, ".go") {
					if _, err := os.Stat(filepath.Join(root, p)); err != nil {
						t.Errorf("%s/doc.go names %s: not in the tree", dir, p)
					}
					continue
				}
				for _, m := range goFileName.FindAllStringSubmatch(word, -1) {
					named[m[1]] = true
					if _, err := os.Stat(filepath.Join(root, dir, m[1])); err != nil && !strings.Contains(word, "/") {
						t.Errorf("%s/doc.go names %s: the package has no such file", dir, m[1])
					}
				}
			}
		}
		n := 0
		for _, f := range files {
			if named[f] {
				n++
			}
		}
		if len(files) == 0 || 2*n < len(files) {
			continue
		}
		lists++
		for _, f := range files {
			if !named[f] {
				t.Errorf("%s/doc.go lists its package's files but not %s: say what it holds", dir, f)
			}
		}
	}
	if lists < 2 {
		t.Errorf("found %d doc.go file lists (webhooks and reconcile/nodeloss have one): is the scan broken?", lists)
	}
}
