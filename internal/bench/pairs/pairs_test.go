package pairs

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadPairsCallsOfOneRound(t *testing.T) {
	in := `{"kind":"check","system":"ort","config":"bert-base"}
{"kind":"bench","system":"ort","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[100,300,200]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[50,100,200]}
{"kind":"bench","system":"ort","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":2,"times_ms":[400]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":2,"times_ms":[100]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":2,"tag":"engines","times_ms":[1]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":1,"seq":128,"round":1,"times_ms":[10]}
`
	// sqc/int8 as a reference too: it is never rated against itself.
	got, err := Read(strings.NewReader(in), []string{"sqc/int8"}, []string{"ort/int8", "torch/fp32", "sqc/int8"})
	if err != nil {
		t.Fatal(err)
	}
	// Pairs: 100/50 = 2, 300/100 = 3, 200/200 = 1 (round 1), 400/100 = 4
	// (round 2; the tagged record is ignored); 1x128 has no ORT times and
	// torch/fp32 none at all, so neither gives a ratio.
	if len(got) != 1 {
		t.Fatalf("got %d ratios, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.Target != "sqc/int8" || r.Reference != "ort/int8" || r.Batch != 8 || r.N != 4 || r.Median != 2.5 || r.Min != 1 || r.Max != 4 {
		t.Errorf("ratio %+v, want sqc/int8 x ort/int8 at 8x128 over 4 pairs, median 2.5, min 1, max 4", r)
	}
	var out bytes.Buffer
	if err := Write(&out, got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2.50x") || !strings.Contains(out.String(), "8x128") {
		t.Errorf("table lacks the ratio or the shape:\n%s", out.String())
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	_, err := Read(strings.NewReader("{\"kind\":\"check\"}\n{not json\n"), []string{"a/b"}, []string{"c/d"})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v, want one naming line 2", err)
	}
}
