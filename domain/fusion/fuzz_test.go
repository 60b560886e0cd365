package fusion_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/entityenrich/enrich/domain/fusion"
)

// FuzzFuse: any two answers fuse without panicking, in either order to the
// same result, and each fused with itself gives itself back.
func FuzzFuse(f *testing.F) {
	f.Add(`{"x":"Paris","n":1,"t":["a"]}`, `{"x":" paris ","n":2.5,"t":["A","b"]}`)
	f.Add(`{"summary":{"en":"Big","fr":"Grand"}}`, `{"summary":{"en":"big","fr":"Gros"}}`)
	f.Add(`{"o":{"a":null,"b":[{"k":1}]}}`, `{"o":{"a":true,"b":[{"k":1.001}]}}`)
	f.Add(`{"m":[1,"1",true,null]}`, `{"m":"mixed"}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var va, vb map[string]any
		if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil || va == nil || vb == nil {
			return
		}
		opt := fusion.Options{Schema: map[string]any{"properties": map[string]any{"summary": map[string]any{"multilingual": true}}}}
		ab := fusion.Fuse([]fusion.Candidate{{Model: "m::a", Value: va}, {Model: "m::b", Value: vb}}, opt)
		ba := fusion.Fuse([]fusion.Candidate{{Model: "m::b", Value: vb}, {Model: "m::a", Value: va}}, opt)
		x, _ := json.Marshal(ab.Merged)
		y, _ := json.Marshal(ba.Merged)
		if string(x) != string(y) {
			t.Fatalf("order changed the result: %s vs %s", x, y)
		}
		if ab.Summary.AgreedFields+ab.Summary.ConflictedFields != ab.Summary.TotalFields {
			t.Fatalf("counts: %+v", ab.Summary)
		}
		self := fusion.Fuse([]fusion.Candidate{{Model: "m::a", Value: va}, {Model: "m::b", Value: va}}, opt)
		if !reflect.DeepEqual(self.Merged, va) || len(self.Report.Conflicts) != 0 {
			t.Fatalf("self-fusion changed %s", a)
		}
	})
}
