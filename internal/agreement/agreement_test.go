package agreement

import (
	"testing"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
)

// TestClaimsAgree asks the rules themselves (api/claims) about every
// shape: the table and the rules it pins say the same.
func TestClaimsAgree(t *testing.T) {
	Check(t, "api/claims", AskIsListener|AskListener|AskOwn|AskClass|AskLabels|AskSelectsPod, func(t *testing.T, s Shape) (Answer, bool) {
		pvc := s.StoredClaim()
		use, ok := claims.OfClaim(pvc)
		use = claims.Bound(pvc, use, s.Volume)
		got := Answer{IsListener: ok, Listener: use.Listener, Own: use.Own, Class: use.Class}
		if ok && use.Own {
			got.SelectsPod = claims.SelectedByName(pvc.Name, pvc.Annotations, s.StatefulSet).Pod
		}
		if ok {
			var listeners []claims.PodListener
			if use.Listener != "" {
				listeners = append(listeners, claims.PodListener{Listener: use.Listener, StatefulSetPod: claims.StatefulSetPod(s.ClaimName(), s.StoredClaim().Annotations)})
			}
			got.Labels = claims.PodLabels(s.Pod.Name, s.Pod.Labels, listeners)
		}
		return got, true
	})
}

// TestDiffFindsEveryField: Check fails on a difference in any field it is
// told to compare, and only in those.
func TestDiffFindsEveryField(t *testing.T) {
	want := Answer{IsListener: true, Listener: "a", Own: true, Class: "c", Labels: map[string]string{names.PodSelectorLabel("a"): "true"}, Pinned: "n", SelectsPod: "p"}
	for _, tc := range []struct {
		field Field
		got   Answer
	}{
		{AskIsListener, Answer{Listener: "a", Own: true, Class: "c", Labels: want.Labels, Pinned: "n", SelectsPod: "p"}},
		{AskListener, Answer{IsListener: true, Listener: "b", Own: true, Class: "c", Labels: want.Labels, Pinned: "n", SelectsPod: "p"}},
		{AskOwn, Answer{IsListener: true, Listener: "a", Class: "c", Labels: want.Labels, Pinned: "n", SelectsPod: "p"}},
		{AskClass, Answer{IsListener: true, Listener: "a", Own: true, Labels: want.Labels, Pinned: "n", SelectsPod: "p"}},
		{AskLabels, Answer{IsListener: true, Listener: "a", Own: true, Class: "c", Pinned: "n", SelectsPod: "p"}},
		{AskPinned, Answer{IsListener: true, Listener: "a", Own: true, Class: "c", Labels: want.Labels, SelectsPod: "p"}},
		{AskSelectsPod, Answer{IsListener: true, Listener: "a", Own: true, Class: "c", Labels: want.Labels, Pinned: "n"}},
	} {
		all := AskIsListener | AskListener | AskOwn | AskClass | AskLabels | AskPinned | AskSelectsPod
		if d := Diff(want, tc.got, all); len(d) != 1 {
			t.Errorf("field %d: %v, want one difference", tc.field, d)
		}
		if d := Diff(want, tc.got, all&^tc.field); len(d) != 0 {
			t.Errorf("field %d not asked: %v, want none", tc.field, d)
		}
	}
}
