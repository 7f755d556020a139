package headers

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// bip158Row is the part of an official BIP-158 test vector row this package
// needs: the filter and the header chain around it.
type bip158Row struct {
	height     float64
	filter     []byte
	prevHeader chainhash.Hash
	header     chainhash.Hash
	notes      string
}

// loadBIP158Rows reads ../testdata/bip158/testnet-19.json; hashes there are
// in display order, as chainhash.NewHashFromStr expects.
func loadBIP158Rows(t *testing.T) []bip158Row {
	t.Helper()
	raw, err := os.ReadFile("../testdata/bip158/testnet-19.json")
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var rows [][]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	var out []bip158Row
	for i, r := range rows {
		if len(r) == 1 { // header/comment row
			continue
		}
		if len(r) != 8 {
			t.Fatalf("row %d: %d fields, want 8", i, len(r))
		}
		filter, err := hex.DecodeString(r[5].(string))
		if err != nil {
			t.Fatalf("row %d filter: %v", i, err)
		}
		prev, err := chainhash.NewHashFromStr(r[4].(string))
		if err != nil {
			t.Fatalf("row %d prev header: %v", i, err)
		}
		hdr, err := chainhash.NewHashFromStr(r[6].(string))
		if err != nil {
			t.Fatalf("row %d header: %v", i, err)
		}
		out = append(out, bip158Row{r[0].(float64), filter, *prev, *hdr, r[7].(string)})
	}
	if len(out) != 10 {
		t.Fatalf("got %d vectors, want 10", len(out))
	}
	return out
}

func TestFilterHeaderMatchesBIP158Vectors(t *testing.T) {
	for _, row := range loadBIP158Rows(t) {
		got := FilterHeader(row.filter, row.prevHeader)
		if got != row.header {
			t.Errorf("height %v (%s): header %s, want %s", row.height, row.notes, got, row.header)
		}
		if viaHash := FilterHeaderFromHash(FilterHash(row.filter), row.prevHeader); viaHash != got {
			t.Errorf("height %v: FilterHeaderFromHash %s, FilterHeader %s", row.height, viaHash, got)
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
	rows := loadBIP158Rows(t)
	// Testnet heights 2 and 3 are consecutive in the vectors: 3's previous
	// header is 2's header, so together they form a real two-link chain.
	h2, h3 := rows[1], rows[2]
	if h2.height != 2 || h3.height != 3 || h3.prevHeader != h2.header {
		t.Fatalf("vector layout changed: rows 1,2 are heights %v,%v", h2.height, h3.height)
	}
	filters := [][]byte{h2.filter, h3.filter}
	good := []chainhash.Hash{h2.header, h3.header}

	if got := ChainHeaders(h2.prevHeader, filters); len(got) != 2 || got[0] != good[0] || got[1] != good[1] {
		t.Fatalf("ChainHeaders = %v, want %v", got, good)
	}

	tests := []struct {
		name    string
		prev    chainhash.Hash
		filters [][]byte
		want    []chainhash.Hash
		wantErr error
	}{
		{"real chain", h2.prevHeader, filters, good, nil},
		{"empty", h2.prevHeader, nil, nil, nil},
		{"wrong prev", chainhash.Hash{}, filters, good, ErrHeaderMismatch},
		{"second header wrong", h2.prevHeader, filters, []chainhash.Hash{good[0], good[0]}, ErrHeaderMismatch},
		{"filters swapped", h2.prevHeader, [][]byte{h3.filter, h2.filter}, good, ErrHeaderMismatch},
		{"more headers than filters", h2.prevHeader, filters[:1], good, ErrCountMismatch},
		{"more filters than headers", h2.prevHeader, filters, good[:1], ErrCountMismatch},
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
