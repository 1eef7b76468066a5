package reconciletest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The API server of the reconcile suites keeps an audit log of the writes
// the operator's identity makes to Listeners and Services, so that a test
// counts writes where they land (a write the operator does not count, or a
// no-op apply, shows there too) rather than by the operator's own metrics.

// auditPolicy logs the operator's writes to Listeners (and their status)
// and Services, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + testenv.OperatorUser + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["services"]
  - group: "listeners.stackable.tech"
    resources: ["listeners", "listeners/status"]
- level: None
`

// auditLog is the path of the API server's audit log ("" before Main).
var auditLog string

// auditFlags writes the audit policy into a new directory and returns the
// API server flags that log to a file beside it.
func auditFlags() ([]string, error) {
	dir, err := os.MkdirTemp("", "reconcile-audit-")
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	auditLog = filepath.Join(dir, "audit.log")
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking"}, nil
}

// AuditMark is a place in the audit log: the writes after it are the ones
// made since it was taken.
type AuditMark int64

// MarkAudit returns the end of the audit log now.
func MarkAudit(t *testing.T) AuditMark {
	t.Helper()
	st, err := os.Stat(auditLog)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return AuditMark(st.Size())
}

// auditEvent is the part of an audit event a test reads.
type auditEvent struct {
	Verb      string `json:"verb"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// OperatorWrites are the writes the operator made to Listeners and
// Services in namespace ns since mark, as "verb resource[/subresource]
// name (code)".
func OperatorWrites(t *testing.T, mark AuditMark, ns string) []string {
	t.Helper()
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatalf("read the audit log: %v", err)
	}
	if int64(mark) > int64(len(data)) {
		t.Fatalf("audit log shorter (%d) than mark %d", len(data), mark)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data[mark:]))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit event %q: %v", sc.Text(), err)
		}
		if ev.ObjectRef.Namespace != ns {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s (%d)", ev.Verb, res, ev.ObjectRef.Name, ev.ResponseStatus.Code))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
