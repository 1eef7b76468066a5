package addresstree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

const (
	// AddressesDir is the directory with one subdirectory per address.
	AddressesDir = "addresses"
	// DefaultAddress links to the directory of the first address.
	DefaultAddress = "default-address"
	// AddressFile holds the address itself inside an address directory.
	AddressFile = "address"
	// PortsDir holds one file per named port inside an address directory.
	PortsDir = "ports"

	// dataLink points at the current generation of the tree. Names starting
	// with ".." cannot clash with addresses (DNS names and IPs never start
	// with a dot).
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
	genPrefix   = ".."

	// staleBatch is how many entries of the target's top directory are
	// read at a time while looking for old generations.
	staleBatch = 128

	dirMode  fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
)

// ErrInvalid is matched (with errors.Is) by every error that Validate and
// Write return for bad input, as opposed to trouble with the disk.
var ErrInvalid = errors.New("invalid listener address")

// InvalidError says which value was refused and why.
type InvalidError struct {
	// Field names what the value is ("address", "port name", "port").
	Field string
	// Value is the refused value.
	Value string
	// Reason says what a valid value looks like.
	Reason string
}

// Error says which value was refused and why.
func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Validate checks that every address is an IP or a DNS name (RFC 1123
// subdomain), every port name a DNS label and every port number within
// 1..65535, and that there is at least one address.
func Validate(addrs []v1alpha1.ListenerIngress) error {
	if len(addrs) == 0 {
		return &InvalidError{Field: "address list", Value: "", Reason: "at least one address is needed"}
	}
	for _, a := range addrs {
		if err := validateAddress(a.Address); err != nil {
			return err
		}
		for name, port := range a.Ports {
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				return &InvalidError{Field: "port name", Value: name, Reason: strings.Join(errs, "; ")}
			}
			if port < 1 || port > 65535 {
				return &InvalidError{Field: "port", Value: strconv.Itoa(int(port)), Reason: fmt.Sprintf("port %s must be between 1 and 65535", name)}
			}
		}
	}
	return nil
}

func validateAddress(addr string) error {
	if ip, err := netip.ParseAddr(addr); err == nil {
		// A zone ("fe80::1%eth0") is node-local and "%" has no place in a name.
		if ip.Zone() != "" {
			return &InvalidError{Field: "address", Value: addr, Reason: "IPv6 zones are not allowed"}
		}
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(addr); len(errs) > 0 {
		return &InvalidError{Field: "address", Value: addr, Reason: "must be an IP address or a DNS name: " + strings.Join(errs, "; ")}
	}
	return nil
}

// Write replaces the tree under target (an existing directory) with one for
// addrs, atomically, and reports whether it changed anything (an identical
// tree is left alone). The first address becomes default-address; later
// duplicates of an address are dropped. Bad input returns an error matching
// ErrInvalid and leaves target untouched; a failed write leaves the previous
// tree in place.
func Write(target string, addrs []v1alpha1.ListenerIngress) (changed bool, err error) {
	if err := Validate(addrs); err != nil {
		return false, err
	}
	root, err := os.OpenRoot(target)
	if err != nil {
		return false, fmt.Errorf("open target %s: %w", target, err)
	}
	defer root.Close()

	// kubelet republishes the same tree again and again (every resync,
	// after restarts); reading it costs far less than writing it.
	want := desiredTree(addrs)
	if current(root, want) {
		return false, nil
	}
	gen, err := newGenerationName()
	if err != nil {
		return false, err
	}
	if err := writeGeneration(root, gen, want); err != nil {
		_ = root.RemoveAll(gen)
		return false, fmt.Errorf("write address tree into %s: %w", target, err)
	}
	old, _ := root.Readlink(dataLink)
	if err := replaceSymlink(root, gen, dataLink); err != nil {
		_ = root.RemoveAll(gen)
		return false, fmt.Errorf("switch %s to the new tree: %w", target, err)
	}
	// From here on the new tree is what ..data shows.
	for _, name := range []string{AddressesDir, DefaultAddress} {
		if err := ensureSymlink(root, dataLink+"/"+name, name); err != nil {
			return true, fmt.Errorf("link %s in %s: %w", name, target, err)
		}
	}
	if err := removeStaleGenerations(root, gen); err != nil {
		return true, fmt.Errorf("remove the previous tree (%s) from %s: %w", old, target, err)
	}
	return true, nil
}

// Remove deletes target and everything under it. A missing target is fine.
func Remove(target string) error {
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("remove %s: %w", target, err)
	}
	return nil
}

func newGenerationName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("name a new tree: %w", err)
	}
	return genPrefix + hex.EncodeToString(b[:]), nil
}

// entry is one file (content), symlink (link) or directory (dir) of a
// tree, by its path relative to the generation directory.
type entry struct {
	content string
	link    string
	dir     bool
}

// desiredTree lays out addrs: one directory per distinct address (the first
// occurrence wins), default-address linking to the first.
func desiredTree(addrs []v1alpha1.ListenerIngress) map[string]entry {
	tree := map[string]entry{DefaultAddress: {link: AddressesDir + "/" + addrs[0].Address}}
	for _, a := range addrs {
		dir := AddressesDir + "/" + a.Address
		if _, seen := tree[dir+"/"+AddressFile]; seen {
			continue
		}
		tree[dir+"/"+AddressFile] = entry{content: a.Address}
		// Always there, so a pod can list the ports of an address without one.
		tree[dir+"/"+PortsDir] = entry{dir: true}
		for name, port := range a.Ports {
			tree[dir+"/"+PortsDir+"/"+name] = entry{content: strconv.Itoa(int(port))}
		}
	}
	return tree
}

// current reports whether the tree under root is exactly want: the
// visible links in place and the generation behind ..data holding want's
// files and links and nothing else. The volume is the pod's, so the walk is
// bounded by want, not by what is there: each directory is read for at
// most one entry more than want puts in it, and one too many means the
// tree is not current (and is rewritten), however many a pod created.
func current(root *os.Root, want map[string]entry) bool {
	for _, name := range []string{AddressesDir, DefaultAddress} {
		if l, err := root.Readlink(name); err != nil || l != dataLink+"/"+name {
			return false
		}
	}
	gen, err := root.Readlink(dataLink)
	if err != nil || !strings.HasPrefix(gen, genPrefix) || strings.Contains(gen, "/") {
		return false
	}
	// Every path of the tree, with the directories that are only implied
	// by what they hold, and how many entries each directory has.
	all := make(map[string]entry, len(want)+8)
	for p, e := range want {
		all[p] = e
		for d := parent(p); d != ""; d = parent(d) {
			if _, seen := all[d]; seen {
				break
			}
			all[d] = entry{dir: true}
		}
	}
	children := map[string]int{}
	for p := range all {
		children[parent(p)]++
	}
	seen := 0
	queue := []string{""}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		entries, ok := readDirBounded(root, path.Join(gen, dir), children[dir])
		if !ok {
			return false
		}
		for _, d := range entries {
			rel := path.Join(dir, d.Name())
			w, ok := all[rel]
			if !ok {
				return false // anything extra: rewrite
			}
			seen++
			switch {
			case w.dir:
				if !d.IsDir() {
					return false
				}
				queue = append(queue, rel)
			case d.Type()&fs.ModeSymlink != 0:
				if l, err := root.Readlink(path.Join(gen, rel)); err != nil || w.link == "" || l != w.link {
					return false
				}
			case !d.Type().IsRegular() || w.link != "":
				return false // a FIFO, device, socket or directory where a file belongs
			default:
				if b, err := readSmall(root, path.Join(gen, rel), len(w.content)); err != nil || string(b) != w.content {
					return false
				}
			}
		}
	}
	return seen == len(all)
}

// readDirBounded reads the entries of dir if it has at most limit of them;
// false if it has more, or cannot be read.
func readDirBounded(root *os.Root, dir string, limit int) ([]fs.DirEntry, bool) {
	f, err := root.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	entries, err := f.ReadDir(limit + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return entries, len(entries) <= limit
}

// readSmall reads a regular file of at most limit bytes. The volume is the
// pod's, which may mount it read-write, so nothing in it is trusted: the
// open does not block (a FIFO swapped in after the walk looked), and a
// file that is not regular or is larger than limit is an error, never read.
func readSmall(root *os.Root, path string, limit int) ([]byte, error) {
	f, err := root.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case fi.Size() > int64(limit):
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

func writeGeneration(root *os.Root, gen string, tree map[string]entry) error {
	if err := root.Mkdir(gen, dirMode); err != nil {
		return err
	}
	// Each os.Root call resolves its path component by component: work in
	// a root opened on the new generation, and create every directory once,
	// parents first, instead of MkdirAll per file.
	g, err := root.OpenRoot(gen)
	if err != nil {
		return err
	}
	defer g.Close()
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	made := map[string]bool{"": true}
	mkdir := func(dir string) error {
		var missing []string
		for d := dir; !made[d]; d = parent(d) {
			missing = append(missing, d)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			if err := g.Mkdir(missing[i], dirMode); err != nil {
				return err
			}
			made[missing[i]] = true
		}
		return nil
	}
	for _, p := range paths {
		e := tree[p]
		if e.dir {
			if err := mkdir(p); err != nil {
				return err
			}
			continue
		}
		if err := mkdir(parent(p)); err != nil {
			return err
		}
		if e.link != "" {
			if err := g.Symlink(e.link, p); err != nil {
				return err
			}
			continue
		}
		if err := g.WriteFile(p, []byte(e.content), fileMode); err != nil {
			return err
		}
	}
	return nil
}

// parent is the directory of a slash-separated relative path ("" at the top).
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// replaceSymlink points name at dest with a rename over name, so that name
// never goes missing.
func replaceSymlink(root *os.Root, dest, name string) error {
	tmp := dataLinkTmp
	if name != dataLink {
		tmp = genPrefix + name + "_tmp"
	}
	// Whatever a pod left at these names (a directory, a FIFO) goes.
	if err := root.RemoveAll(tmp); err != nil {
		return err
	}
	if err := root.Symlink(dest, tmp); err != nil {
		return err
	}
	if fi, err := root.Lstat(name); err == nil && fi.IsDir() {
		// rename cannot replace a directory with a symlink.
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	return root.Rename(tmp, name)
}

// ensureSymlink makes name a symlink to dest unless it is one already. A
// directory of the same name (a tree written by something else) is replaced.
func ensureSymlink(root *os.Root, dest, name string) error {
	if cur, err := root.Readlink(name); err == nil && cur == dest {
		return nil
	}
	return replaceSymlink(root, dest, name)
}

// removeStaleGenerations deletes every hidden generation directory except
// the current one: the previous tree, and any left by an interrupted write.
func removeStaleGenerations(root *os.Root, current string) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	var errs []error
	for {
		// In batches: a pod may have created any number of entries here.
		entries, err := d.ReadDir(staleBatch)
		for _, e := range entries {
			n := e.Name()
			if !strings.HasPrefix(n, genPrefix) || n == current || n == dataLink || !e.IsDir() {
				continue
			}
			if err := root.RemoveAll(n); err != nil {
				errs = append(errs, err)
			}
		}
		if errors.Is(err, io.EOF) || len(entries) == 0 {
			break
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}
