package robustness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The operator's writes are counted where they land: the API server logs
// every write of the operator's identity (any resource, events included)
// to an audit log, so that "settled" and "quiet" do not rest on what the
// operator says of itself.

// auditPolicy logs the writes of user and nothing else.
func auditPolicy(user string) string {
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + user + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`
}

// AuditLog is the API server's audit log of the operator's writes.
type AuditLog struct{ path string }

// NewAuditLog writes the policy for user's writes into dir and returns the
// log and the kube-apiserver flags that keep it.
func NewAuditLog(dir, user string) (*AuditLog, []string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(user)), 0o600); err != nil {
		return nil, nil, err
	}
	a := &AuditLog{path: filepath.Join(dir, "audit.log")}
	return a, []string{"--audit-policy-file=" + policy, "--audit-log-path=" + a.path, "--audit-log-mode=blocking"}, nil
}

// Mark is the end of the log now: the writes after it are those made since.
func (a *AuditLog) Mark() (int64, error) {
	st, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Writes are the writes logged since mark, as "verb resource[/sub]
// namespace/name (code)".
func (a *AuditLog) Writes(mark int64) ([]string, error) {
	data, err := os.ReadFile(a.path)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	if mark > int64(len(data)) {
		return nil, fmt.Errorf("audit log shorter (%d) than mark %d", len(data), mark)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data[mark:]))
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
			return nil, fmt.Errorf("audit event %q: %w", sc.Text(), err)
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s (%d)", ev.Verb, res, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.ResponseStatus.Code))
	}
	return out, sc.Err()
}
