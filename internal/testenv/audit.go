package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An audit log counts the operator's writes where they land: the API
// server logs the writes its policy names (a write the operator does not
// count, or a no-op apply, shows there too), so that tests do not rest on
// what the operator says of itself (the reconcile suites' steady-state
// table, the robustness suite's "settled" and "quiet").

// AuditPolicy logs the writes of user (to resources, group/resource
// pairs such as "/services" or "listeners.stackable.tech/listeners/status";
// none: to anything) and nothing else.
func AuditPolicy(user string, resources ...string) string {
	p := `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + user + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
`
	if len(resources) > 0 {
		p += "  resources:\n"
		for _, r := range resources {
			group, res, _ := strings.Cut(r, "/")
			p += fmt.Sprintf("  - group: %q\n    resources: [%q]\n", group, res)
		}
	}
	return p + "- level: None\n"
}

// AuditLog is the API server's audit log of the operator's writes.
type AuditLog struct{ path string }

// NewAuditLog writes policy (AuditPolicy) into dir and returns the log and
// the kube-apiserver flags that keep it.
func NewAuditLog(dir, policy string) (*AuditLog, []string, error) {
	path := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		return nil, nil, err
	}
	a := &AuditLog{path: filepath.Join(dir, "audit.log")}
	return a, []string{"--audit-policy-file=" + path, "--audit-log-path=" + a.path, "--audit-log-mode=blocking"}, nil
}

// Mark is the end of the log's last whole line now: the writes after it
// are those made since.
func (a *AuditLog) Mark() (int64, error) {
	data, err := os.ReadFile(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(bytes.LastIndexByte(data, '\n') + 1), nil
}

// Write is one write of the operator's that the API server logged.
type Write struct {
	Verb, Resource, Namespace, Name string
	Code                            int
}

func (w Write) String() string {
	return fmt.Sprintf("%s %s %s/%s (%d)", w.Verb, w.Resource, w.Namespace, w.Name, w.Code)
}

// Writes are the writes logged since mark (whole lines only), and the
// mark after the last of them.
func (a *AuditLog) Writes(mark int64) ([]Write, int64, error) {
	data, err := os.ReadFile(a.path)
	if os.IsNotExist(err) {
		return nil, mark, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the audit log: %w", err)
	}
	if mark > int64(len(data)) {
		return nil, 0, fmt.Errorf("audit log shorter (%d) than mark %d", len(data), mark)
	}
	data = data[mark:]
	data = data[:bytes.LastIndexByte(data, '\n')+1] // a line being written waits for the next read
	var out []Write
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev struct {
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource, Subresource, Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, 0, fmt.Errorf("audit event %q: %w", sc.Text(), err)
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, Write{Verb: ev.Verb, Resource: res, Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, Code: ev.ResponseStatus.Code})
	}
	return out, mark + int64(len(data)), sc.Err()
}
