package webhooks

import (
	"reflect"
	"strings"
	"testing"
)

// podDecodeCases are pods, odd ones among them, that decodePod must read
// as the reflecting view decoder does.
var podDecodeCases = []struct{ name, raw string }{
	{"StatefulSet replica", statefulSetPodJSON},
	{"ephemeral, claim, CSI, affinity", fuzzEphemeralPod},
	{"bare opted-in", fuzzBarePod},
	{"catalogue pod", f(catPod, "p", optedIn+f(classAnn, "c"), f(ephemeralV, "x"))},
	{"inline CSI", f(catPod, "p", "", inlineCSI)},
	{"null", `null`},
	{"empty", `{}`},
	{"white space everywhere", " \n{ \"metadata\" :\t{ \"name\" : \"p\" , \"labels\" : { \"a\" : \"b\" } } ,\r\n \"spec\" : { \"containers\" : [ { \"name\" : \"c\" , \"ports\" : [ { \"containerPort\" : 80 } ] } ] } } \n"},
	{"null metadata and lists", `{"metadata":null,"spec":{"volumes":null,"containers":null,"initContainers":null,"affinity":null}}`},
	{"empty lists and maps", `{"metadata":{"labels":{},"annotations":{}},"spec":{"volumes":[],"containers":[],"initContainers":[]}}`},
	{"null labels and values", `{"metadata":{"name":null,"labels":null,"annotations":{"a":null}}}`},
	{"escapes in values and keys", `{"metadata":{"name":"a\u0062c","labels":{"k\u0031":"v\"q","x/y":"\\"},"annotations":{"note":"\u003cb\u003e \ud83d\ude00 \/ \t"}}}`},
	{"escaped field name is not the field", `{"metadata":{"n\u0061me":"p","name":"q"}}`},
	{"non-ASCII", `{"metadata":{"name":"p","annotations":{"gruß":"wéb ☃"}}}`},
	{"duplicate scalar and map keys", `{"metadata":{"name":"a","name":"b","labels":{"x":"1"},"labels":{"y":"2"}}}`},
	{"unknown fields of every kind", `{"kind":"Pod","x":[1,-2.5e+3,true,false,null,"s]}",{"a":[[{}]]}],"metadata":{"uid":"u","ownerReferences":[{"controller":true}],"name":"p"},"spec":{"hostNetwork":false,"priority":0,"overhead":{"cpu":"1"},"containers":[{"env":[{"name":"E","value":"{\"a\":1}"}],"name":"c","args":["]","}"]}]},"status":{}}`},
	{"init containers, ports, mounts", `{"spec":{"initContainers":[{"name":"i","ports":[{"name":"p","containerPort":1,"protocol":"UDP","hostPort":2}],"volumeMounts":[{"name":"l","mountPath":"/stackable/listener","readOnly":true}]}]}}`},
	{"negative and largest ports", `{"spec":{"containers":[{"ports":[{"containerPort":-1},{"containerPort":2147483647},{"containerPort":null}]}]}}`},
	{"claim and ephemeral sources", `{"spec":{"volumes":[{"name":"a","persistentVolumeClaim":{"claimName":"c","readOnly":true}},{"name":"b","ephemeral":{"volumeClaimTemplate":{"metadata":{"labels":{"l":"v"}},"spec":{"storageClassName":"listeners.stackable.tech"}}}},{"name":"c","persistentVolumeClaim":null},{"name":"d","csi":{"driver":"d","volumeAttributes":{"a":"b"}}}]}}`},
	{"claim sources, odd", `{"spec":{"volumes":[{"persistentVolumeClaim":{}},{"persistentVolumeClaim":{"claimName":null,"readOnly":null}},{"persistentVolumeClaim":{"readOnly":false,"claimName":"c\u0031","x":{"y":[1]}}},{"persistentVolumeClaim":{"claimName":"a","readOnly":true},"persistentVolumeClaim":{"claimName":"b"}},{"persistentVolumeClaim":{"claimName":"a"},"persistentVolumeClaim":null},{"persistentVolumeClaim":{"readOnly":true,"readOnly":false,"ClaimName":"x"}}]}}`},
	{"readiness gates", `{"spec":{"readinessGates":[{"conditionType":"listeners.stackable.tech/addresses-ready"},{"conditionType":"x","other":1},{}]}}`},
	{"null readiness gates", `{"spec":{"readinessGates":null}}`},

	// Refused by both.
	{"not an object", `[]`},
	{"a string", `"pod"`},
	{"bytes left over", `{} {}`},
	{"truncated", `{"metadata":{"name":"p"`},
	{"name a number", `{"metadata":{"name":5}}`},
	{"labels a list", `{"metadata":{"labels":[]}}`},
	{"label value a number", `{"metadata":{"labels":{"a":1}}}`},
	{"volumes an object", `{"spec":{"volumes":{}}}`},
	{"container a string", `{"spec":{"containers":["c"]}}`},
	{"port a string", `{"spec":{"containers":[{"ports":[{"containerPort":"80"}]}]}}`},
	{"port a fraction", `{"spec":{"containers":[{"ports":[{"containerPort":80.5}]}]}}`},
	{"port too large", `{"spec":{"containers":[{"ports":[{"containerPort":2147483648}]}]}}`},
	{"port with a plus", `{"spec":{"containers":[{"ports":[{"containerPort":+80}]}]}}`},
	{"claim source a string", `{"spec":{"volumes":[{"persistentVolumeClaim":"c"}]}}`},
	{"claim source a list", `{"spec":{"volumes":[{"persistentVolumeClaim":[]}]}}`},
	{"claim name a number", `{"spec":{"volumes":[{"persistentVolumeClaim":{"claimName":1}}]}}`},
	{"read-only a string", `{"spec":{"volumes":[{"persistentVolumeClaim":{"readOnly":"true"}}]}}`},
	{"read-only a number", `{"spec":{"volumes":[{"persistentVolumeClaim":{"readOnly":1}}]}}`},
	{"read-only misspelt", `{"spec":{"volumes":[{"persistentVolumeClaim":{"readOnly":tru}}]}}`},
	{"affinity a list", `{"spec":{"affinity":[]}}`},
	{"readiness gate a string", `{"spec":{"readinessGates":["g"]}}`},
	{"bad literal in a skipped field", `{"spec":{"hostNetwork":nope}}`},
	{"missing colon", `{"metadata" {}}`},
	{"missing comma", `{"metadata":{} "spec":{}}`},
	{"unterminated string", `{"metadata":{"name":"p}}`},
	{"control character in a string", "{\"metadata\":{\"name\":\"a\nb\"}}"},
}

// TestDecodePodAgrees: decodePod reads every pod of podDecodeCases into
// the view the reflecting decoder makes of it, and refuses what it refuses.
func TestDecodePodAgrees(t *testing.T) {
	for _, tc := range podDecodeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecodePod(t, []byte(strings.ReplaceAll(tc.raw, "NS", "default")))
		})
	}
}

// TestDecodePodDepth: nesting too deep for the decoders is refused, not a
// crash.
func TestDecodePodDepth(t *testing.T) {
	deep := `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	var pod podView
	if err := decodePod([]byte(deep), &pod); err == nil {
		t.Fatal("a pod nested 20,000 deep was decoded")
	}
}

// FuzzDecodePod holds decodePod to the reflecting decoder on any input.
func FuzzDecodePod(f *testing.F) {
	for _, tc := range podDecodeCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodePod(t, raw) })
}

func checkDecodePod(t *testing.T, raw []byte) {
	t.Helper()
	var want, got podView
	wantErr := viewDecoder.Unmarshal(raw, &want)
	gotErr := decodePod(raw, &got)
	switch {
	case (wantErr == nil) != (gotErr == nil):
		t.Fatalf("decodePod error %v, the view decoder's %v, for %s", gotErr, wantErr, raw)
	case wantErr != nil:
		if !strings.HasPrefix(gotErr.Error(), "decode Pod: ") {
			t.Errorf("error %q does not say what could not be decoded", gotErr)
		}
	case !reflect.DeepEqual(got, want):
		t.Fatalf("decodePod read\n%+v\nthe view decoder\n%+v\nfrom %s", got, want, raw)
	}
}
