package daemon

import "testing"

// A JSON log line the runtime's gctrace output interrupted is still read
// whole, and the gctrace line around it is put back together.
func TestDaemonLinesSplitsInterleavedGCTrace(t *testing.T) {
	var d Lines
	for _, tc := range []struct{ in, obj, gc string }{
		{`{"level":"info","message":"catching up"}`, `{"level":"info","message":"catching up"}`, ""},
		{`gc 1 @0.005s 12%: 1.9+4.7+0.047 ms clock, 1->1->0 MB, 1 MB goal, 2 P`, "", `gc 1 @0.005s 12%: 1.9+4.7+0.047 ms clock, 1->1->0 MB, 1 MB goal, 2 P`},
		{`gc 3{"level":"info","height":304,"message":"caught up"}`, `{"level":"info","height":304,"message":"caught up"}`, ""},
		{` @0.028s 6%: 0.019+0.94+0.004 ms clock, 4->5->4 MB, 4 MB goal, 2 P`, "", `gc 3 @0.028s 6%: 0.019+0.94+0.004 ms clock, 4->5->4 MB, 4 MB goal, 2 P`},
		{`gc 4 @0.045s 4%: 0.064+2.2+0.003 ms clock, 5->5->4 MB, 5 MB goal, 2 P`, "", `gc 4 @0.045s 4%: 0.064+2.2+0.003 ms clock, 5->5->4 MB, 5 MB goal, 2 P`},
		// As recorded from a failed run: the catch-up's last line inside a
		// gctrace line's field list.
		{`gc 9 @0.113s 7%: 0.42+2.8+0.002 ms clock, 8->9->7 MB, {"level":"info","height":304,"blocks":305,"message":"caught up"}`, `{"level":"info","height":304,"blocks":305,"message":"caught up"}`, ""},
		{`9 MB goal, 0 MB stacks, 0 MB globals, 2 P`, "", `gc 9 @0.113s 7%: 0.42+2.8+0.002 ms clock, 8->9->7 MB, 9 MB goal, 0 MB stacks, 0 MB globals, 2 P`},
	} {
		obj, gc := d.split([]byte(tc.in))
		if string(obj) != tc.obj || string(gc) != tc.gc {
			t.Errorf("split(%q) = %q, %q; want %q, %q", tc.in, obj, gc, tc.obj, tc.gc)
		}
	}
}
