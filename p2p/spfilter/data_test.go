package spfilter

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

func TestSplitData(t *testing.T) {
	tests := []struct {
		name              string
		data              []byte
		tweakData, filter []byte
		bad               bool
	}{
		{"no tweaks, empty filter", []byte{1, 0, 0}, []byte{0}, []byte{0}, false},
		{"tweak data and filter", append([]byte{3, 1, 2, 3}, 9, 8), []byte{1, 2, 3}, []byte{9, 8}, false},
		{"empty", nil, nil, nil, true},
		{"no filter", []byte{1, 0}, nil, nil, true},
		{"length past the end", []byte{5, 0, 0}, nil, nil, true},
		{"non-shortest length", []byte{0xfd, 1, 0, 0, 0}, nil, nil, true},
		{"over MaxDataSize", make([]byte, MaxDataSize+1), nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			td, f, err := SplitData(tc.data)
			if tc.bad {
				if !errors.Is(err, ErrBadData) {
					t.Fatalf("err = %v, want ErrBadData", err)
				}
				return
			}
			if err != nil || !bytes.Equal(td, tc.tweakData) || !bytes.Equal(f, tc.filter) {
				t.Fatalf("SplitData = %x, %x, %v; want %x, %x", td, f, err, tc.tweakData, tc.filter)
			}
			if again := AppendData(nil, td, f); !bytes.Equal(again, tc.data) || DataLen(len(td), len(f)) != len(tc.data) {
				t.Fatalf("AppendData = %x, want %x", again, tc.data)
			}
		})
	}
}

// FuzzSplitData: whatever a peer sends, SplitData does not panic, and what
// it accepts AppendData writes back byte for byte.
func FuzzSplitData(f *testing.F) {
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{0xfd, 0xfd, 0})
	f.Add(AppendData(nil, bytes.Repeat([]byte{7}, 300), []byte{1, 2}))
	f.Fuzz(func(t *testing.T, data []byte) {
		td, filter, err := SplitData(data)
		if err != nil {
			return
		}
		if again := AppendData(nil, td, filter); !bytes.Equal(again, data) {
			t.Fatalf("round trip %x -> %x", data, again)
		}
		if _, err := DataCommitment(data); err != nil {
			t.Fatal(err)
		}
	})
}

// checkpointView serves only Range and Checkpoints: an index whose first
// height is 1,500.
type checkpointView struct {
	View
	entries []Header
}

func (v checkpointView) Range() (uint32, uint32) { return 1500, 3001 }

func (v checkpointView) Checkpoints(chainhash.Hash) ([]Header, error) { return v.entries, nil }

// Heights below the index's first have the zero header in cfcheckpt, so
// that entry i is the height (i+1)·1,000 as BIP-157 has it.
func TestCFCheckptZeroBelowFirstHeight(t *testing.T) {
	h2000, h3000 := chainhash.Hash{2}, chainhash.Hash{3}
	stop := chainhash.Hash{9}
	s := New(checkpointView{entries: []Header{{Height: 2000, Header: h2000}, {Height: 3000, Header: h3000}}}, wire.TestNet)
	frame, err := s.CFCheckpt(3000, stop)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.NewMsgCFCheckpt(FilterType, &stop, 3)
	for _, h := range []chainhash.Hash{{}, h2000, h3000} {
		if err := want.AddCFHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, want, wire.ProtocolVersion, wire.TestNet); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, buf.Bytes()) {
		t.Fatalf("cfcheckpt\n got %x\nwant %x", frame, buf.Bytes())
	}
	// A view that returns checkpoints at the wrong heights is an error,
	// not an answer.
	s = New(checkpointView{entries: []Header{{Height: 1000}}}, wire.TestNet)
	if _, err := s.CFCheckpt(1999, stop); err != nil {
		t.Fatal(err) // 1 entry at 1,000 for stop 1,999: right
	}
	if _, err := s.CFCheckpt(2999, stop); err == nil {
		t.Fatal("an entry at 1,000 answered as the one at 2,000")
	}
}
