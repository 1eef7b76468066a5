package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The request plumbing every handler shares: decoding the admitted object,
// building the patch, and the answers (denials, warnings, the fail-open
// metric). Each kind's handler is decode once → validate → mutate → respond.

// viewDecoder decodes the admitted objects into the handlers' views. It
// matches field names case-sensitively, as the API server's own decoder
// does, and is about twice as fast as encoding/json on a pod, which is most
// of the pod webhook's time.
var viewDecoder = jsoniter.Config{CaseSensitive: true, ObjectFieldMustBeSimpleString: true}.Froze()

// decode decodes an admitted object of kind into the view v.
func decode(raw []byte, kind string, v any) error {
	if err := viewDecoder.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// malformed is the answer to an object that cannot be decoded.
func malformed(err error) admission.Response {
	return admission.Errored(http.StatusBadRequest, err)
}

// expectKinds refuses requests for kinds the handler does not judge: the
// API server only sends what a webhook's rules name, so anything else was
// posted by something else, and a handler must not read one kind's fields
// as another's.
type expectKinds struct {
	admission.Handler
	kinds []schema.GroupKind
}

func (e expectKinds) Handle(ctx context.Context, req admission.Request) admission.Response {
	got := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	if slices.Contains(e.kinds, got) {
		return e.Handler.Handle(ctx, req)
	}
	want := make([]string, len(e.kinds))
	for i, k := range e.kinds {
		want[i] = k.String()
	}
	return admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook judges %s, not %q", strings.Join(want, ", "), got.String()))
}

// respond admits the object with the patch p and warnings; without
// operations, it admits it unchanged (no patch when nothing changed).
//
// The patch goes into the response as the bytes the webhook server sends
// (Patch), encoded here in one pass: given as Patches, the server's
// Complete encodes each operation on its own and copies it into the list
// (jsonpatch's MarshalJSON), for the same bytes.
func respond(p patch, warnings []string) admission.Response {
	resp := admission.Allowed("").WithWarnings(warnings...)
	if len(p) == 0 {
		return resp
	}
	b, err := json.Marshal(p)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the patch: %w", err))
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = b, &pt
	return resp
}

// invalid is the denial for errs: a Kubernetes Invalid error that kubectl
// shows with each field path and message.
func invalid(req admission.Request, errs field.ErrorList) admission.Response {
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	name := req.Name
	st := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
}

// lookupFailed is the answer of a handler on a failurePolicy Fail webhook
// when it cannot read what it needs: the API server refuses the request and
// the client can retry.
func lookupFailed(err error) admission.Response {
	return admission.Errored(http.StatusServiceUnavailable, err)
}

// ratchet drops from errs the errors that old already had, so that an
// update of an object that became invalid (its class was deleted, a rule
// got stricter) is only refused for what the update itself breaks. Without
// it, removing a finalizer from such an object would be refused.
func ratchet(errs, old field.ErrorList) field.ErrorList {
	if len(errs) == 0 || len(old) == 0 {
		return errs
	}
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !seen[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

// failOpen counts admissions that a handler let through unchanged because a
// lookup failed, on webhooks whose failurePolicy is Ignore.
var failOpen = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "listener_operator_webhook_fail_open_total",
	Help: "Admissions let through without (part of) their mutation because a lookup failed.",
}, []string{"webhook"})

func init() {
	metrics.Registry.MustRegister(failOpen)
}

// recordFailOpen records a lookup of webhook that failed: the object (a
// pod, ...) is admitted without what the lookup would have added.
func recordFailOpen(ctx context.Context, webhook, object string, err error) {
	failOpen.WithLabelValues(webhook).Inc()
	logf.FromContext(ctx).Error(err, "admitting the "+object+" without the mutation that needed this lookup")
}

// patch collects JSON patch operations on the fields a handler changes, so
// that nothing else in the object (fields this build does not know among
// them) is touched.
type patch []patchOp

// patchOp is one operation of a JSON patch (RFC 6902). The handlers only
// add, so value is always written (null included).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func (p *patch) add(path string, value any) {
	*p = append(*p, patchOp{Op: "add", Path: path, Value: value})
}

// setMapEntry sets key in the map at path (e.g. /metadata/labels), creating
// the map when the object has none. exists says whether the map exists,
// which for the first entry added becomes true.
func (p *patch) setMapEntry(path string, exists *bool, key string, value any) {
	if !*exists {
		p.add(path, map[string]any{key: value})
		*exists = true
		return
	}
	p.add(entry(path, key), value)
}

// appendTo appends value to the list at path, creating the list when the
// object has none (length -1 says so); the length is updated.
func (p *patch) appendTo(path string, length *int, value any) {
	if *length < 0 {
		p.add(path, []any{value})
		*length = 1
		return
	}
	p.add(path+"/-", value)
	*length++
}

// length is the length of a decoded list for appendTo: -1 when the object
// has none.
func length[T any](s []T) int {
	if s == nil {
		return -1
	}
	return len(s)
}

// entry is the JSON pointer (RFC 6901) of key in the map at path, key's
// "~" and "/" escaped, written in one piece: label keys have a "/", and a
// separate escape and join cost a pod admission an allocation per label.
func entry(path, key string) string {
	var b strings.Builder
	b.Grow(len(path) + 1 + len(key) + strings.Count(key, "~") + strings.Count(key, "/"))
	b.WriteString(path)
	b.WriteByte('/')
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(key[i])
		}
	}
	return b.String()
}

// index is i as a JSON pointer segment.
func index(path string, i int, rest string) string {
	return path + "/" + strconv.Itoa(i) + rest
}

func ptr[T any](v T) *T { return &v }

// joinSorted lists names for a message.
func joinSorted(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
