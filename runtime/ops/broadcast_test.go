package ops

import "testing"

// TestBroadcastIndex compares BroadcastIndex with a direct per-element
// computation on shapes that exercise every fast path and the general one.
func TestBroadcastIndex(t *testing.T) {
	cases := [][2][]int64{
		{{}, {2, 3}}, {{3}, {2, 3}}, {{2, 1}, {2, 3}}, {{1, 3, 1}, {2, 3, 4}},
		{{2, 1, 4}, {2, 3, 4}}, {{1, 1}, {5, 1}}, {{4}, {4}}, {{1, 4}, {4}}, {{3, 1, 1}, {2, 3, 2, 2}},
	}
	for _, c := range cases {
		in, out := c[0], c[1]
		got := BroadcastIndex(in, out)
		inStr := stridesOf(in)
		outStr := stridesOf(out)
		for o := range got {
			want := 0
			for d := range out {
				pos := (o / outStr[d]) % int(out[d])
				if id := d - (len(out) - len(in)); id >= 0 && in[id] != 1 {
					want += pos * inStr[id]
				}
			}
			if got[o] != want {
				t.Fatalf("BroadcastIndex(%v, %v)[%d] = %d, want %d", in, out, o, got[o], want)
			}
		}
	}
}
