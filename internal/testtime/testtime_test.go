package testtime

import (
	"testing"
	"time"
)

func TestScaleUsesTheEnvironmentFactor(t *testing.T) {
	t.Setenv(EnvScale, "")
	base := Scale(time.Second)
	if base < time.Second || base > maxLoadFactor*time.Second {
		t.Fatalf("Scale(1s) = %v without a factor, want 1s..%ds", base, maxLoadFactor)
	}
	t.Setenv(EnvScale, "3")
	if got := Scale(time.Second); got < 3*time.Second || got > 3*maxLoadFactor*time.Second {
		t.Fatalf("Scale(1s) = %v with factor 3", got)
	}
	for _, bad := range []string{"0", "-2", "x"} {
		t.Setenv(EnvScale, bad)
		if got := Scale(time.Second); got < time.Second || got > maxLoadFactor*time.Second {
			t.Fatalf("Scale(1s) = %v with factor %q, want the factor ignored", got, bad)
		}
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Minute, func() bool { n++; return n == 3 }) {
		t.Fatal("Poll gave up on a condition that holds on the third check")
	}
	t.Setenv(EnvScale, "0.001") // 1/1000 of 1s, times the load: still short
	start := time.Now()
	if Poll(time.Second, func() bool { return false }) {
		t.Fatal("Poll reported a condition that never holds")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Poll of a false condition took %v", time.Since(start))
	}
}
