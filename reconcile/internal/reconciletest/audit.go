package reconciletest

import (
	"fmt"
	"os"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The API server of the reconcile suites keeps an audit log of the writes
// the operator's identity makes to Listeners, Services and pods' status
// (testenv.AuditLog), so that a test counts writes where they land rather
// than by the operator's own metrics.

// auditLog is the API server's audit log (nil before Main).
var auditLog *testenv.AuditLog

// auditFlags writes the audit policy (the operator's writes to Listeners,
// their status, Services and pods' status) into a new directory and returns the API
// server flags that log to a file beside it.
func auditFlags() ([]string, error) {
	dir, err := os.MkdirTemp("", "reconcile-audit-")
	if err != nil {
		return nil, err
	}
	policy := testenv.AuditPolicy(testenv.OperatorUser, "/services", "/pods/status", "listeners.stackable.tech/listeners", "listeners.stackable.tech/listeners/status")
	log, flags, err := testenv.NewAuditLog(dir, policy)
	auditLog = log
	return flags, err
}

// AuditMark is a place in the audit log: the writes after it are the ones
// made since it was taken.
type AuditMark int64

// MarkAudit returns the end of the audit log now.
func MarkAudit(t *testing.T) AuditMark {
	t.Helper()
	mark, err := auditLog.Mark()
	if err != nil {
		t.Fatal(err)
	}
	return AuditMark(mark)
}

// OperatorWrites are the writes the operator made to Listeners,
// Services and pods' status in namespace ns since mark, as "verb resource[/subresource]
// name (code)".
func OperatorWrites(t *testing.T, mark AuditMark, ns string) []string {
	t.Helper()
	writes, _, err := auditLog.Writes(int64(mark))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range writes {
		if w.Namespace == ns {
			out = append(out, fmt.Sprintf("%s %s %s (%d)", w.Verb, w.Resource, w.Name, w.Code))
		}
	}
	return out
}
