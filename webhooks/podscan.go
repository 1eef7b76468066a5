package webhooks

import (
	"bytes"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// decodePod decodes an admitted pod into its view, as decode(raw, "Pod",
// pod) does (TestDecodePodAgrees holds them to the same views and the same
// refusals), without building anything for the fields the view leaves out.
// Most of a pod is what the view skips (images, env, probes, resources,
// tolerations, owner references), and the reflecting decoder allocates a
// string for every key it skips; a pod admission spent a quarter of its
// handler's time there (docs/benchmarks.md, "Admission
// floor"). The fields the view keeps whole (a volume's claim, ephemeral or
// CSI source, the affinity) are few and go through viewDecoder.
func decodePod(raw []byte, pod *podView) error {
	s := scanner{b: raw}
	s.object(func(key []byte) {
		switch string(key) {
		case "metadata":
			s.meta(&pod.Metadata)
		case "spec":
			s.podSpec(&pod.Spec)
		default:
			s.skip()
		}
	})
	s.end()
	if s.err != nil {
		return fmt.Errorf("decode Pod: %w", s.err)
	}
	return nil
}

// scanner reads JSON from b at i; the first error stops it (err).
type scanner struct {
	b     []byte
	i     int
	depth int
	err   error
	src   string // b as a string, for text
}

// maxDepth bounds nesting, as the reflecting decoders do.
const maxDepth = 10000

func (s *scanner) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("%s at offset %d", what, s.i)
	}
	s.i = len(s.b)
}

// peek is the next byte that is not white space (0 at the end).
func (s *scanner) peek() byte {
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// end refuses anything but white space after the value.
func (s *scanner) end() {
	if s.err == nil && s.peek() != 0 {
		s.fail("bytes left after the object")
	}
}

// null reads a null if one comes next.
func (s *scanner) null() bool {
	if s.peek() != 'n' {
		return false
	}
	s.literal("null")
	return true
}

func (s *scanner) literal(word string) {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		s.fail("invalid literal")
		return
	}
	s.i += len(word)
}

// object calls field with each key of the object that comes next (nothing
// for null), the reader at the key's value, which field must read. The key
// is valid until the next read; as viewDecoder's, keys are compared as they
// are written (no escapes decoded).
func (s *scanner) object(field func(key []byte)) {
	if s.null() {
		return
	}
	if s.peek() != '{' {
		s.fail("expected an object")
		return
	}
	if s.depth++; s.depth > maxDepth {
		s.fail("nested too deep")
		return
	}
	defer func() { s.depth-- }()
	s.i++
	if s.peek() == '}' {
		s.i++
		return
	}
	for s.err == nil {
		key := s.rawString()
		if s.peek() != ':' {
			s.fail("expected a colon after an object key")
			return
		}
		s.i++
		field(key)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.fail("expected a comma or the end of an object")
		}
	}
}

// array calls elem for each element of the array that comes next (nothing
// for null), the reader at the element, which elem must read.
func (s *scanner) array(elem func()) {
	if s.null() {
		return
	}
	if s.peek() != '[' {
		s.fail("expected an array")
		return
	}
	if s.depth++; s.depth > maxDepth {
		s.fail("nested too deep")
		return
	}
	defer func() { s.depth-- }()
	s.i++
	if s.peek() == ']' {
		s.i++
		return
	}
	for s.err == nil {
		elem()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return
		default:
			s.fail("expected a comma or the end of an array")
		}
	}
}

// rawString is the string that comes next as written (escapes included,
// without its quotes); it is valid until the next read.
func (s *scanner) rawString() []byte {
	if s.peek() != '"' {
		s.fail("expected a string")
		return nil
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i]
		case c == '\\':
			i++
		case c < ' ':
			s.fail("control character in a string")
			return nil
		}
	}
	s.fail("unterminated string")
	return nil
}

// str reads a string ("" for null). One with escapes is decoded by
// viewDecoder, so that both decode it alike.
func (s *scanner) str() string {
	if s.null() {
		return ""
	}
	s.peek()
	from := s.i
	raw := s.rawString()
	if s.err != nil {
		return ""
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		return s.unquote(s.b[from:s.i])
	}
	return s.text(raw)
}

// text is raw, a part of s.b, as a string: a slice of one copy of s.b,
// made on first use, so the strings of a pod's view cost one allocation
// together instead of one each (BenchmarkPodWebhookServing). The view
// lives as long as the request, as does the copy.
func (s *scanner) text(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	at := cap(s.b) - cap(raw)
	if at < 0 || at+len(raw) > len(s.b) || &s.b[at] != &raw[0] {
		return string(raw) // not a part of s.b
	}
	if s.src == "" {
		s.src = string(s.b)
	}
	return s.src[at : at+len(raw)]
}

// unquote decodes the quoted string with escapes with viewDecoder.
func (s *scanner) unquote(quoted []byte) string {
	var out string
	s.delegate(quoted, &out)
	return out
}

// int32 reads a number that fits an int32 (0 for null).
func (s *scanner) int32() int32 {
	if s.null() {
		return 0
	}
	from := s.i
	s.number()
	if s.err != nil {
		return 0
	}
	digits := s.b[from:s.i]
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	n, err := strconv.ParseInt(string(s.b[from:s.i]), 10, 32)
	if err != nil || len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || digits[0] == '0' && len(digits) > 1 {
		s.fail("expected a 32-bit integer")
		return 0
	}
	return int32(n)
}

// number skips a number.
func (s *scanner) number() {
	from := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		default:
			if s.i == from {
				s.fail("expected a value")
			}
			return
		}
	}
	if s.i == from {
		s.fail("expected a value")
	}
}

// strings reads an object of strings into *m, as viewDecoder does: added
// to what *m holds, nil for null, keys' escapes decoded.
func (s *scanner) strings(m *map[string]string) {
	if s.null() {
		*m = nil
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	s.object(func(key []byte) {
		var k string
		if bytes.IndexByte(key, '\\') >= 0 {
			k = s.unquote(append(append([]byte{'"'}, key...), '"'))
		} else {
			k = s.text(key)
		}
		(*m)[k] = s.str()
	})
}

// skip reads past the value that comes next.
func (s *scanner) skip() {
	switch s.peek() {
	case '{':
		s.object(func([]byte) { s.skip() })
	case '[':
		s.array(s.skip)
	case '"':
		s.rawString()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.number()
	}
}

// delegate decodes the value that comes next into v with viewDecoder: for
// the parts of the view that it keeps whole.
func (s *scanner) delegate(raw []byte, v any) {
	if err := viewDecoder.Unmarshal(raw, v); err != nil {
		if s.err == nil {
			s.err = err
		}
		s.i = len(s.b)
	}
}

// value decodes the value that comes next into v with viewDecoder.
func (s *scanner) value(v any) {
	s.peek()
	from := s.i
	s.skip()
	if s.err == nil {
		s.delegate(s.b[from:s.i], v)
	}
}

func (s *scanner) meta(m *objectMetaView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "name":
			m.Name = s.str()
		case "labels":
			s.strings(&m.Labels)
		case "annotations":
			s.strings(&m.Annotations)
		default:
			s.skip()
		}
	})
}

func (s *scanner) podSpec(spec *podSpecView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "volumes":
			spec.Volumes = scanList(s, (*scanner).volume)
		case "containers":
			spec.Containers = scanList(s, (*scanner).container)
		case "initContainers":
			spec.InitContainers = scanList(s, (*scanner).container)
		case "affinity":
			s.value(&spec.Affinity)
		case "readinessGates":
			spec.ReadinessGates = scanList(s, (*scanner).readinessGate)
		default:
			s.skip()
		}
	})
}

func (s *scanner) readinessGate(g *readinessGateView) {
	s.object(func(key []byte) {
		if string(key) == "conditionType" {
			g.ConditionType = s.str()
			return
		}
		s.skip()
	})
}

// scanList reads a list of T (nil for null, empty for []) with elem.
func scanList[T any](s *scanner, elem func(*scanner, *T)) []T {
	if s.null() {
		return nil
	}
	out := make([]T, 0, 4)
	s.array(func() {
		out = append(out, *new(T))
		elem(s, &out[len(out)-1])
	})
	return out
}

func (s *scanner) volume(v *volumeView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "name":
			v.Name = s.str()
		case "persistentVolumeClaim":
			s.claimSource(&v.PersistentVolumeClaim)
		case "ephemeral":
			s.value(&v.Ephemeral)
		case "csi":
			s.value(&v.CSI)
		default:
			s.skip()
		}
	})
}

// claimSource reads a volume's claim source into *src (nil for null),
// into the one *src holds if any, as viewDecoder does with a repeated key.
// Every pod a StatefulSet makes has one; handing it to viewDecoder cost a
// pod admission a quarter of its volumes' decoding
// (BenchmarkPodDecodeAndPatch).
func (s *scanner) claimSource(src **corev1.PersistentVolumeClaimVolumeSource) {
	if s.null() {
		*src = nil
		return
	}
	if s.peek() != '{' {
		s.fail("expected an object")
		return
	}
	if *src == nil {
		*src = new(corev1.PersistentVolumeClaimVolumeSource)
	}
	c := *src
	s.object(func(key []byte) {
		switch string(key) {
		case "claimName":
			c.ClaimName = s.str()
		case "readOnly":
			s.boolean(&c.ReadOnly)
		default:
			s.skip()
		}
	})
}

// boolean reads true or false into *b (null leaves it as it is, as
// viewDecoder does).
func (s *scanner) boolean(b *bool) {
	switch s.peek() {
	case 'n':
		s.literal("null")
	case 't':
		s.literal("true")
		*b = true
	case 'f':
		s.literal("false")
		*b = false
	default:
		s.fail("expected true or false")
	}
}

func (s *scanner) container(c *containerView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "name":
			c.Name = s.str()
		case "ports":
			c.Ports = scanList(s, (*scanner).port)
		case "volumeMounts":
			c.VolumeMounts = scanList(s, (*scanner).mount)
		default:
			s.skip()
		}
	})
}

func (s *scanner) port(p *portView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "name":
			p.Name = s.str()
		case "containerPort":
			p.ContainerPort = s.int32()
		case "protocol":
			p.Protocol = corev1.Protocol(s.str())
		default:
			s.skip()
		}
	})
}

func (s *scanner) mount(m *mountView) {
	s.object(func(key []byte) {
		switch string(key) {
		case "name":
			m.Name = s.str()
		case "mountPath":
			m.MountPath = s.str()
		default:
			s.skip()
		}
	})
}
