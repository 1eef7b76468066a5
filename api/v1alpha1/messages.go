package v1alpha1

import "unicode/utf8"

// MaxMessage bounds the messages of the conditions and events the operator
// writes: a condition's message may hold at most 32768 bytes, and a status
// write with a longer one fails; messages built from user input (overrides,
// many refused fields, templates) can be longer.
const MaxMessage = 8192

// TruncateMessage shortens msg to MaxMessage bytes, on a rune boundary, and
// says so.
func TruncateMessage(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	const tail = " … (truncated)"
	cut := MaxMessage - len(tail)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + tail
}
