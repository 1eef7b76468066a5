package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// residentSplit reads, from /proc of this host, how a pod's operator
// process's resident memory divides: anonymous memory (heap, stacks: what
// the process holds) and file-backed pages (the mapped binary: shared,
// clean and reclaimable). It finds the process by the pod's UID in its
// cgroup and the binary's name in its command line, so it only answers for
// pods of the node the harness runs on; ok is false otherwise.
func residentSplit(podUID string) (anon, file float64, ok bool) {
	if podUID == "" {
		return 0, 0, false
	}
	want := []string{"pod" + podUID, "pod" + strings.ReplaceAll(podUID, "-", "_")}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cg, err := os.ReadFile(filepath.Join(d, "cgroup"))
		if err != nil || !(bytes.Contains(cg, []byte(want[0])) || bytes.Contains(cg, []byte(want[1]))) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("listener-operator")) {
			continue
		}
		if anon, file, ok := statusRSS(filepath.Join(d, "status")); ok {
			return anon, file, true
		}
	}
	return 0, 0, false
}

// statusRSS reads RssAnon and RssFile (in kB) from a /proc/<pid>/status.
func statusRSS(path string) (anon, file float64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		switch k {
		case "RssAnon":
			anon = n * 1024
			found++
		case "RssFile":
			file = n * 1024
			found++
		}
	}
	return anon, file, found == 2
}
