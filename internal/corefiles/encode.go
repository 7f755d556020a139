package corefiles

import (
	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// AppendVarInt appends n in Bitcoin Core's VARINT encoding (serialize.h):
// base-128 digits, most significant first, the high bit set on every byte
// but the last, and each digit but the last reduced by one so that every
// value has a single encoding.
func AppendVarInt(dst []byte, n uint64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(n & 0x7f)
	for n > 0x7f {
		n = n>>7 - 1
		i--
		tmp[i] = byte(n&0x7f) | 0x80
	}
	return append(dst, tmp[i:]...)
}

// CompressAmount is Core's CompressAmount: 0 stays 0; otherwise strip up to
// nine trailing decimal zeros (e), then for e < 9 encode the last digit d
// and the rest n as 1 + 10*(9*n + d - 1) + e, and for e = 9 as
// 1 + 10*(n - 1) + 9.
func CompressAmount(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	e := uint64(0)
	for n%10 == 0 && e < 9 {
		n /= 10
		e++
	}
	if e < 9 {
		d := n % 10
		n /= 10
		return 1 + (n*9+d-1)*10 + e
	}
	return 1 + (n-1)*10 + 9
}

// Script compression codes; raw scripts are stored as len+6.
const (
	codeP2PKH      = 0
	codeP2SH       = 1
	specialScripts = 6
)

// AppendCompressedScript appends script as Core's ScriptCompression writes
// it: P2PKH and P2SH as code 0/1 and the 20-byte hash, P2PK with a
// compressed key as its prefix (2/3) and x, P2PK with a fully valid
// uncompressed key as 4 or 5 (the parity of y) and x, anything else as
// VARINT(len+6) and the bytes.
func AppendCompressedScript(dst, script []byte) []byte {
	switch {
	case len(script) == 25 && script[0] == 0x76 && script[1] == 0xa9 && script[2] == 20 && script[23] == 0x88 && script[24] == 0xac:
		dst = append(dst, codeP2PKH)
		return append(dst, script[3:23]...)
	case len(script) == 23 && script[0] == 0xa9 && script[1] == 20 && script[22] == 0x87:
		dst = append(dst, codeP2SH)
		return append(dst, script[2:22]...)
	case len(script) == 35 && script[0] == 33 && script[34] == 0xac && (script[1] == 2 || script[1] == 3):
		return append(dst, script[1:34]...)
	case len(script) == 67 && script[0] == 65 && script[66] == 0xac && script[1] == 4:
		if _, err := btcec.ParsePubKey(script[1:66]); err == nil {
			dst = append(dst, 4|script[65]&1)
			return append(dst, script[2:34]...)
		}
	}
	dst = AppendVarInt(dst, uint64(len(script))+specialScripts)
	return append(dst, script...)
}

// Coin is an unspent output as the undo data records it.
type Coin struct {
	Value    int64
	Script   []byte
	Height   int32
	Coinbase bool
}

// AppendCoin appends c as Core's TxInUndoFormatter writes it:
// VARINT(height*2 + coinbase), a zero byte when the height is not zero (a
// dummy older readers expect), VARINT(CompressAmount(value)) and the
// compressed script.
func AppendCoin(dst []byte, c Coin) []byte {
	code := uint64(c.Height) * 2
	if c.Coinbase {
		code++
	}
	dst = AppendVarInt(dst, code)
	if c.Height > 0 {
		dst = append(dst, 0)
	}
	dst = AppendVarInt(dst, CompressAmount(uint64(c.Value)))
	return AppendCompressedScript(dst, c.Script)
}

// AppendBlockUndo appends a CBlockUndo: the coins spent by each
// non-coinbase transaction, in block order.
func AppendBlockUndo(dst []byte, txs [][]Coin) []byte {
	dst = wirescan.AppendCompactSize(dst, uint64(len(txs)))
	for _, coins := range txs {
		dst = wirescan.AppendCompactSize(dst, uint64(len(coins)))
		for _, c := range coins {
			dst = AppendCoin(dst, c)
		}
	}
	return dst
}
