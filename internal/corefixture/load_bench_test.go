package corefixture

import "testing"

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := LoadDir(DefaultDir()); err != nil {
			b.Fatal(err)
		}
	}
}
