package foreign

import (
	"strings"
	"testing"
)

func TestForeignSelectorKeys(t *testing.T) {
	want := map[string]string{"listener.stackable.tech/mnt.web": "true", "app": "web"}
	for _, tc := range []struct {
		name string
		have map[string]string
		want []string
	}{
		{"ours", map[string]string{"listener.stackable.tech/mnt.web": "true", "app": "web"}, nil},
		{"the Stackable operator's", map[string]string{"listener.stackable.tech/mnt.0a1b2c": "web", "app": "web"}, []string{"listener.stackable.tech/mnt.0a1b2c"}},
		{"other keys are the user's business", map[string]string{"listener.stackable.tech/mnt.web": "true", "tier": "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectorKeys(tc.have, want)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("SelectorKeys = %v, want %v", got, tc.want)
			}
		})
	}
}
