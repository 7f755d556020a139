package gcs_test

import (
	"testing"

	"github.com/cfindexd/cfindexd/gcs"
)

// TestCountBasicScriptsMatchesAdd checks that CountBasicScripts counts
// exactly the elements AddBasicScripts adds: empty and OP_RETURN outputs
// left out, empty spent scripts left out, duplicates counted (the builder
// removes them later).
func TestCountBasicScriptsMatchesAdd(t *testing.T) {
	p2wpkh := append([]byte{0x00, 0x14}, make([]byte, 20)...)
	for _, tc := range []struct {
		name       string
		outs, prev [][]byte
		want       int
	}{
		{"nothing", nil, nil, 0},
		{"coinbase only", [][]byte{p2wpkh, {0x6a, 0x24, 0xaa}}, nil, 1},
		{"empty and OP_RETURN outputs", [][]byte{{}, {0x6a}, p2wpkh, {0x51}}, [][]byte{p2wpkh}, 3},
		{"empty spent scripts", [][]byte{p2wpkh}, [][]byte{{}, {0x6a}, p2wpkh}, 3},
		{"duplicates", [][]byte{p2wpkh, p2wpkh}, [][]byte{p2wpkh}, 3},
	} {
		var b gcs.BasicBuilder
		gcs.AddBasicScripts(&b, tc.outs, tc.prev)
		if got := gcs.CountBasicScripts(tc.outs, tc.prev); got != tc.want || got != b.Len() {
			t.Errorf("%s: counted %d, added %d, want %d", tc.name, got, b.Len(), tc.want)
		}
	}
}
