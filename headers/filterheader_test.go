package headers

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

func TestFilterHeaderMatchesBIP158Vectors(t *testing.T) {
	for _, row := range testvectors.LoadBIP158(t) {
		got := FilterHeader(row.Filter, row.PrevHeader)
		if got != row.Header {
			t.Errorf("height %v (%s): header %s, want %s", row.Height, row.Notes, got, row.Header)
		}
		if viaHash := FilterHeaderFromHash(FilterHash(row.Filter), row.PrevHeader); viaHash != got {
			t.Errorf("height %v: FilterHeaderFromHash %s, FilterHeader %s", row.Height, viaHash, got)
		}
	}
}

func TestFilterHeaderDoesNotAllocate(t *testing.T) {
	filter := []byte{0x01, 0x9d, 0xfc, 0xa8}
	var prev chainhash.Hash
	allocs := testing.AllocsPerRun(100, func() { prev = FilterHeader(filter, prev) })
	if allocs != 0 {
		t.Fatalf("FilterHeader allocates %v times per call", allocs)
	}
}

func TestVerifyChain(t *testing.T) {
	rows := testvectors.LoadBIP158(t)
	// Testnet heights 2 and 3 are consecutive in the vectors: 3's previous
	// header is 2's header, so together they form a real two-link chain.
	h2, h3 := rows[1], rows[2]
	if h2.Height != 2 || h3.Height != 3 || h3.PrevHeader != h2.Header {
		t.Fatalf("vector layout changed: rows 1,2 are heights %v,%v", h2.Height, h3.Height)
	}
	filters := [][]byte{h2.Filter, h3.Filter}
	good := []chainhash.Hash{h2.Header, h3.Header}

	if got := ChainHeaders(h2.PrevHeader, filters); len(got) != 2 || got[0] != good[0] || got[1] != good[1] {
		t.Fatalf("ChainHeaders = %v, want %v", got, good)
	}

	tests := []struct {
		name    string
		prev    chainhash.Hash
		filters [][]byte
		want    []chainhash.Hash
		wantErr error
	}{
		{"real chain", h2.PrevHeader, filters, good, nil},
		{"empty", h2.PrevHeader, nil, nil, nil},
		{"wrong prev", chainhash.Hash{}, filters, good, ErrHeaderMismatch},
		{"second header wrong", h2.PrevHeader, filters, []chainhash.Hash{good[0], good[0]}, ErrHeaderMismatch},
		{"filters swapped", h2.PrevHeader, [][]byte{h3.Filter, h2.Filter}, good, ErrHeaderMismatch},
		{"more headers than filters", h2.PrevHeader, filters[:1], good, ErrCountMismatch},
		{"more filters than headers", h2.PrevHeader, filters, good[:1], ErrCountMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyChain(tc.prev, tc.filters, tc.want)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("VerifyChain err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
