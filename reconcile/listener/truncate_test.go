package listener

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestConditionMessagesAreTruncated: a condition message may hold at most
// 32768 bytes and a longer one makes the status write fail, so messages
// built from user input (overrides, many refused fields) are cut, on a rune
// boundary, and say so.
func TestConditionMessagesAreTruncated(t *testing.T) {
	for _, msg := range []string{
		"short",
		strings.Repeat("x", 40<<10),
		strings.Repeat("é", 20<<10), // two bytes per rune
		strings.Repeat("a", v1alpha1.MaxMessage),
	} {
		st := withCondition(v1alpha1.ListenerStatus{}, nil, 1, verdict{reason: v1alpha1.ReasonInvalid, message: msg})
		got := st.Conditions[0].Message
		switch {
		case len(got) > v1alpha1.MaxMessage:
			t.Errorf("message of %d bytes kept at %d, want at most %d", len(msg), len(got), v1alpha1.MaxMessage)
		case !utf8.ValidString(got):
			t.Errorf("message of %d bytes cut inside a rune", len(msg))
		case len(msg) <= v1alpha1.MaxMessage && got != msg:
			t.Errorf("message of %d bytes changed", len(msg))
		case len(msg) > v1alpha1.MaxMessage && !strings.HasSuffix(got, "(truncated)"):
			t.Errorf("cut message does not say so: …%s", got[len(got)-20:])
		}
	}
}
