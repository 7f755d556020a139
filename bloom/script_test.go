package bloom

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// pushes lists the data pushes scriptOp yields until it stops, and whether
// it stopped at a parse failure.
func pushes(script []byte) (out [][]byte, failed bool) {
	for pc := 0; ; {
		_, data, next, ok := scriptOp(script, pc)
		if !ok {
			return out, pc < len(script)
		}
		if data != nil {
			out = append(out, data)
		}
		pc = next
	}
}

func TestScriptOpFollowsCoreGetOp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string
		failed bool
	}{
		{"empty", "", nil, false},
		{"p2pkh", "76a91404943fdd508053c75000106d3bc6e2754dbcff1988ac", []string{"04943fdd508053c75000106d3bc6e2754dbcff19"}, false},
		{"OP_0 pushes nothing", "00", nil, false},
		{"PUSHDATA1 of 0 is an empty push", "4c00", []string{""}, false},
		{"PUSHDATA2", "4d0300aabbcc", []string{"aabbcc"}, false},
		{"PUSHDATA4", "4e02000000aabb", []string{"aabb"}, false},
		{"small ints are not data", "515f60", nil, false},
		{"truncated direct push", "03aabb", nil, true},
		{"pushes before a truncated one count", "01aa02bbcc05dd", []string{"aa", "bbcc"}, true},
		{"PUSHDATA1 without length", "4c", nil, true},
		{"PUSHDATA2 short length", "4d01", nil, true},
		{"PUSHDATA4 huge length", "4effffffff00", nil, true},
		{"PUSHDATA4 length past the end", "4e05000000aabb", nil, true},
	} {
		got, failed := pushes(mustHex(t, tc.script))
		var gotHex []string
		for _, g := range got {
			gotHex = append(gotHex, strings.ToLower(hexString(g)))
		}
		if !slices.Equal(gotHex, tc.want) || failed != tc.failed {
			t.Errorf("%s: pushes %q failed=%v, want %q failed=%v", tc.name, gotHex, failed, tc.want, tc.failed)
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// matchAllFilter returns a filter holding exactly the given elements (a big
// filter, so nothing else matches by accident in these small tests).
func exactFilter(mode wire.BloomUpdateType, elems ...[]byte) *Filter {
	f := New(Params{Size: MaxFilterSize, HashFuncs: 20}, 99, mode)
	for _, e := range elems {
		f.Insert(e)
	}
	return f
}

// The matcher walks scripts as Core does: the pushes before a malformed
// push are tested, nothing after it; empty pushes never match even when
// the filter holds the empty string.
func TestMatchScriptsLikeCore(t *testing.T) {
	a, b := bytes.Repeat([]byte{0xaa}, 20), bytes.Repeat([]byte{0xbb}, 20)
	tx := func(pkScript, sigScript []byte) *wire.MsgTx {
		m := wire.NewMsgTx(1)
		m.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{1}, Index: 3}, sigScript, nil))
		m.AddTxOut(wire.NewTxOut(1, pkScript))
		return m
	}
	push := func(d []byte) []byte { return append([]byte{byte(len(d))}, d...) }
	broken := []byte{0x05, 0x01} // a push of 5 with 1 byte left
	for _, tc := range []struct {
		name     string
		tx       *wire.MsgTx
		elements [][]byte
		want     bool
	}{
		{"output push before a malformed push", tx(slices.Concat(push(a), broken), nil), [][]byte{a}, true},
		{"output push after a malformed push", tx(slices.Concat(broken, push(a)), nil), [][]byte{a}, false},
		{"scriptSig push before a malformed push", tx(nil, slices.Concat(push(b), broken)), [][]byte{b}, true},
		{"scriptSig push after a malformed push", tx(nil, slices.Concat(broken, push(b))), [][]byte{b}, false},
		{"OP_0 with the empty string in the filter", tx([]byte{0x00, 0x14}, []byte{0x00}), [][]byte{{}}, false},
		{"empty PUSHDATA1 with the empty string in the filter", tx([]byte{0x4c, 0x00}, nil), [][]byte{{}}, false},
		{"spent outpoint", tx(nil, nil), nil, false},
		{"witness is never looked at", func() *wire.MsgTx {
			m := tx([]byte{0x51}, nil)
			m.TxIn[0].Witness = wire.TxWitness{a}
			return m
		}(), [][]byte{a}, false},
	} {
		f := exactFilter(wire.BloomUpdateNone, tc.elements...)
		txid := tc.tx.TxHash()
		if got := f.MatchTxAndUpdate(tc.tx, &txid); got != tc.want {
			t.Errorf("%s: match %v, want %v", tc.name, got, tc.want)
		}
	}
	// The spent outpoint matches once inserted.
	m := tx(nil, nil)
	f := exactFilter(wire.BloomUpdateNone)
	f.InsertOutPoint(m.TxIn[0].PreviousOutPoint)
	id := m.TxHash()
	if !f.MatchTxAndUpdate(m, &id) {
		t.Error("spent outpoint did not match")
	}
}

// Core's short-cuts: a zero-byte filter matches everything and ignores
// inserts; k = 0 contains everything; the reserved nFlags bits are masked
// off; filteradd refuses elements over 520 bytes.
func TestCoreShortCuts(t *testing.T) {
	m := wire.NewMsgTx(1)
	m.AddTxIn(wire.NewTxIn(&wire.OutPoint{}, nil, nil))
	m.AddTxOut(wire.NewTxOut(1, []byte{0x51}))
	id := m.TxHash()

	empty, err := Load(wire.NewMsgFilterLoad(nil, 10, 0, wire.BloomUpdateAll))
	if err != nil {
		t.Fatal(err)
	}
	empty.Insert([]byte("x"))
	if !empty.MatchTxAndUpdate(m, &id) || !empty.Contains([]byte("anything")) || empty.Size() != 0 {
		t.Error("a zero-byte filter must match everything and stay empty")
	}
	if !empty.MatchesAll() || empty.EstimatedFPR() != 1 {
		t.Error("a zero-byte filter must report itself as matching everything")
	}

	k0, err := Load(wire.NewMsgFilterLoad(make([]byte, 100), 0, 0, wire.BloomUpdateNone))
	if err != nil {
		t.Fatal(err)
	}
	if !k0.MatchTxAndUpdate(m, &id) || !k0.MatchesAll() || k0.EstimatedFPR() != 1 {
		t.Error("k = 0 must match everything (Core: contains() loops zero times)")
	}

	// nFlags 5 is BLOOM_UPDATE_ALL with a reserved bit: Core masks it.
	pk := bytes.Repeat([]byte{0xcc}, 20)
	pay := wire.NewMsgTx(1)
	pay.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: 9}, nil, nil))
	pay.AddTxOut(wire.NewTxOut(1, slices.Concat([]byte{0x76, 0xa9, 0x14}, pk, []byte{0x88, 0xac})))
	payID := pay.TxHash()
	for _, flags := range []wire.BloomUpdateType{5, 0x81, 3, 4} {
		f := exactFilter(flags, pk)
		f.MatchTxAndUpdate(pay, &payID)
		added := f.ContainsOutPoint(wire.OutPoint{Hash: payID, Index: 0})
		if want := flags&3 == wire.BloomUpdateAll; added != want {
			t.Errorf("nFlags %#x: outpoint added %v, want %v", flags, added, want)
		}
	}

	f := exactFilter(wire.BloomUpdateNone)
	if err := f.FilterAdd(make([]byte, MaxFilterAddSize)); err != nil {
		t.Errorf("520-byte filteradd: %v", err)
	}
	if err := f.FilterAdd(make([]byte, MaxFilterAddSize+1)); !errors.Is(err, ErrElementTooLarge) {
		t.Errorf("521-byte filteradd: %v, want ErrElementTooLarge", err)
	}
	if _, err := Load(wire.NewMsgFilterLoad(make([]byte, MaxFilterSize+1), 1, 0, 0)); !errors.Is(err, ErrFilterTooLarge) {
		t.Errorf("36,001-byte filterload: %v", err)
	}
	if _, err := Load(wire.NewMsgFilterLoad(make([]byte, 10), MaxHashFuncs+1, 0, 0)); !errors.Is(err, ErrTooManyHashFuncs) {
		t.Errorf("51 hash functions: %v", err)
	}
	if _, err := Load(wire.NewMsgFilterLoad(make([]byte, MaxFilterSize), MaxHashFuncs, 0, 0)); err != nil {
		t.Errorf("largest legal filter: %v", err)
	}
}

// BLOOM_UPDATE_P2PUBKEY_ONLY adds an outpoint for exactly the scripts
// Core's Solver calls PUBKEY or MULTISIG. btcd's GetScriptClass agrees on
// the standard ones and differs on the rows marked btcd.
func TestPubKeyOrMultisigLikeCoreSolver(t *testing.T) {
	key33 := "21" + "02" + strings.Repeat("11", 32)
	key65 := "41" + "04" + strings.Repeat("22", 64)
	hybrid := "41" + "06" + strings.Repeat("33", 64)
	for _, tc := range []struct {
		name   string
		script string
		core   bool
		btcd   bool
	}{
		{"P2PK compressed", key33 + "ac", true, true},
		{"P2PK uncompressed", key65 + "ac", true, true},
		{"P2PK hybrid key", hybrid + "ac", true, true},
		{"P2PK bad key prefix", "21" + "05" + strings.Repeat("11", 32) + "ac", false, false},
		{"bare 1-of-2", "51" + key33 + key65 + "52ae", true, true},
		{"bare 2-of-2", "52" + key33 + key33 + "52ae", true, true},
		{"P2PKH", "76a914" + strings.Repeat("44", 20) + "88ac", false, false},
		{"P2SH", "a914" + strings.Repeat("55", 20) + "87", false, false},
		{"P2WPKH", "0014" + strings.Repeat("66", 20), false, false},
		{"P2TR", "5120" + strings.Repeat("77", 32), false, false},
		{"OP_RETURN", "6a04deadbeef", false, false},
		{"multisig m > n", "52" + key33 + "51ae", false, true},
		{"multisig m = 0", "00" + key33 + "51ae", false, true},
		{"multisig with a non-key push", "51" + "0401020304" + "51ae", false, true},
		{"multisig with a non-push key slot", "51" + "76" + "51ae", false, true},
		{"multisig n = 17 pushed", "51" + strings.Repeat(key33, 17) + "0111ae", true, false},
		{"multisig n pushed non-minimally", "51" + key33 + "0101ae", false, false},
		{"multisig count mismatch", "51" + key33 + "52ae", false, false},
		{"multisig with trailing op", "51" + key33 + "5175ae", false, false},
		{"multisig truncated key", "51" + "2102aabb" + "51ae", false, false},
	} {
		s := mustHex(t, tc.script)
		if got := isPubKeyOrMultisig(s); got != tc.core {
			t.Errorf("%s: Core Solver says %v, we say %v", tc.name, tc.core, got)
		}
		class := txscript.GetScriptClass(s)
		if got := class == txscript.PubKeyTy || class == txscript.MultiSigTy; got != tc.btcd {
			t.Errorf("%s: btcd says %v (%v), table says %v", tc.name, got, class, tc.btcd)
		}
	}
}
