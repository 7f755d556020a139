package silentpay

import (
	"encoding/binary"
)

// Script opcodes and template sizes this package recognizes.
const (
	op0           = 0x00
	opPushData1   = 0x4c
	opPushData2   = 0x4d
	opPushData4   = 0x4e
	op1           = 0x51
	op2           = 0x52
	op16          = 0x60
	opDup         = 0x76
	opEqual       = 0x87
	opEqualVerify = 0x88
	opHash160     = 0xa9
	opCheckSig    = 0xac

	p2pkhSize  = 25
	p2shSize   = 23
	p2wpkhSize = 22
	p2trSize   = 34

	// annexTag is BIP-341's first byte of an annex, the last witness item
	// of a taproot spend when there are at least two.
	annexTag = 0x50
)

// numsH is BIP-341's NUMS point H, the x-only internal key of taproot
// outputs without a key path: a script-path spend with H as its internal
// key does not count for BIP-352.
const numsH = "\x50\x92\x9b\x74\xc1\xa0\x49\x54\xb7\x8b\x4b\x60\x35\xe9\x7a\x5e" +
	"\x07\x8a\x5a\x0f\x28\xec\x96\xd5\x47\xbf\xee\x9a\xce\x80\x3a\xc0"

func isP2PKH(s []byte) bool {
	return len(s) == p2pkhSize && s[0] == opDup && s[1] == opHash160 && s[2] == 20 &&
		s[23] == opEqualVerify && s[24] == opCheckSig
}

func isP2SH(s []byte) bool {
	return len(s) == p2shSize && s[0] == opHash160 && s[1] == 20 && s[22] == opEqual
}

func isP2WPKH(s []byte) bool {
	return len(s) == p2wpkhSize && s[0] == op0 && s[1] == 20
}

// IsTaproot reports whether script is a BIP-341 taproot output: OP_1
// followed by a 32-byte push.
func IsTaproot(script []byte) bool {
	return len(script) == p2trSize && script[0] == op1 && script[1] == xOnlySize
}

// spendsFutureWitness reports whether script is a BIP-141 witness program
// of version 2 to 16, whose spends make BIP-352 skip the transaction.
func spendsFutureWitness(script []byte) bool {
	n := len(script)
	return n >= 4 && n <= 42 && script[0] >= op2 && script[0] <= op16 && int(script[1]) == n-2
}

// pushes calls fn with the data of every push in script, in order, until fn
// returns false or an operation does not fit in script (a malformed
// script ends the walk; no push after it is seen). Non-push opcodes are
// stepped over.
func pushes(script []byte, fn func(data []byte) bool) {
	for i := 0; i < len(script); {
		op := script[i]
		i++
		var n int
		switch {
		case op < opPushData1:
			n = int(op)
		case op == opPushData1:
			if i+1 > len(script) {
				return
			}
			n = int(script[i])
			i++
		case op == opPushData2:
			if i+2 > len(script) {
				return
			}
			n = int(binary.LittleEndian.Uint16(script[i:]))
			i += 2
		case op == opPushData4:
			if i+4 > len(script) {
				return
			}
			v := binary.LittleEndian.Uint32(script[i:])
			if uint64(v) > uint64(len(script)-i-4) {
				return
			}
			n = int(v)
			i += 4
		default:
			continue
		}
		if n > len(script)-i {
			return
		}
		if !fn(script[i : i+n]) {
			return
		}
		i += n
	}
}
