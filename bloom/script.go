package bloom

import "encoding/binary"

// Opcodes the matcher and the script classifier look at.
const (
	op0             = 0x00
	opPushData1     = 0x4c
	opPushData2     = 0x4d
	opPushData4     = 0x4e
	op1Negate       = 0x4f
	op1             = 0x51
	op16            = 0x60
	opEqual         = 0x87
	opHash160       = 0xa9
	opCheckSig      = 0xac
	opCheckMultisig = 0xae
	opReturn        = 0x6a
	// maxPubKeysPerMultisig is MAX_PUBKEYS_PER_MULTISIG.
	maxPubKeysPerMultisig = 20
)

// scriptOp decodes the operation at script[pc:] as Core's GetScriptOp
// does: the opcode, the bytes it pushes (nil for OP_0 and non-push
// opcodes; a subslice of script, never copied) and where the next
// operation starts. ok is false at the end of the script and when a push
// runs past it, which ends every loop over a script in Core: the pushes
// before a malformed one count, nothing after it does.
func scriptOp(script []byte, pc int) (op byte, data []byte, next int, ok bool) {
	if pc >= len(script) {
		return 0, nil, pc, false
	}
	op = script[pc]
	pc++
	if op > opPushData4 {
		return op, nil, pc, true
	}
	var size int
	switch {
	case op == op0:
		return op, nil, pc, true
	case op < opPushData1:
		size = int(op)
	case op == opPushData1:
		if len(script)-pc < 1 {
			return op, nil, pc, false
		}
		size = int(script[pc])
		pc++
	case op == opPushData2:
		if len(script)-pc < 2 {
			return op, nil, pc, false
		}
		size = int(binary.LittleEndian.Uint16(script[pc:]))
		pc += 2
	default: // opPushData4
		if len(script)-pc < 4 {
			return op, nil, pc, false
		}
		n := binary.LittleEndian.Uint32(script[pc:])
		pc += 4
		if uint64(n) > uint64(len(script)-pc) {
			return op, nil, pc, false
		}
		size = int(n)
	}
	if size > len(script)-pc {
		return op, nil, pc, false
	}
	return op, script[pc : pc+size], pc + size, true
}

// containsAnyPush reports whether f contains one of the non-empty data
// pushes of script, walking it as Core's IsRelevantAndUpdate does: in
// order, stopping at the first push f contains or at the first operation
// that does not parse. Empty pushes (OP_0, a PUSHDATA of length 0) are
// never tested.
func (f *Filter) containsAnyPush(script []byte) bool {
	for pc := 0; ; {
		_, data, next, ok := scriptOp(script, pc)
		if !ok {
			return false
		}
		if len(data) != 0 && f.Contains(data) {
			return true
		}
		pc = next
	}
}

// isPubKeyOrMultisig reports whether Core's Solver classifies script as
// TxoutType::PUBKEY or TxoutType::MULTISIG, the outputs
// BLOOM_UPDATE_P2PUBKEY_ONLY adds to the filter. It follows Solver's order:
// P2SH, witness programs and OP_RETURN data carriers are classified first
// and are neither (P2PKH, tested between PUBKEY and MULTISIG, cannot look
// like either: it ends in OP_CHECKSIG after a 20-byte push).
func isPubKeyOrMultisig(script []byte) bool {
	switch {
	case isPayToScriptHash(script), isWitnessProgram(script), isNullData(script):
		return false
	}
	return isPayToPubKey(script) || isMultisig(script)
}

// isPayToScriptHash is CScript::IsPayToScriptHash.
func isPayToScriptHash(s []byte) bool {
	return len(s) == 23 && s[0] == opHash160 && s[1] == 0x14 && s[22] == opEqual
}

// isWitnessProgram is CScript::IsWitnessProgram: 4 to 42 bytes, a version
// opcode (OP_0, OP_1..OP_16), then one direct push filling the rest.
func isWitnessProgram(s []byte) bool {
	if len(s) < 4 || len(s) > 42 {
		return false
	}
	if s[0] != op0 && (s[0] < op1 || s[0] > op16) {
		return false
	}
	return int(s[1])+2 == len(s)
}

// isNullData is Solver's NULL_DATA test: OP_RETURN followed only by
// operations that parse and are ≤ OP_16 (IsPushOnly, which lets
// OP_RESERVED through as Core does).
func isNullData(s []byte) bool {
	if len(s) < 1 || s[0] != opReturn {
		return false
	}
	for pc := 1; pc < len(s); {
		op, _, next, ok := scriptOp(s, pc)
		if !ok || op > op16 {
			return false
		}
		pc = next
	}
	return true
}

// isPayToPubKey is Solver's MatchPayToPubkey: a 65-byte or 33-byte push
// of a validly sized public key, then OP_CHECKSIG.
func isPayToPubKey(s []byte) bool {
	switch len(s) {
	case 67:
		return s[0] == 65 && s[66] == opCheckSig && validPubKeySize(s[1:66])
	case 35:
		return s[0] == 33 && s[34] == opCheckSig && validPubKeySize(s[1:34])
	}
	return false
}

// validPubKeySize is CPubKey::ValidSize: the length its first byte
// implies (33 for 0x02/0x03, 65 for 0x04/0x06/0x07). Nothing else about
// the key is checked.
func validPubKeySize(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch k[0] {
	case 2, 3:
		return len(k) == 33
	case 4, 6, 7:
		return len(k) == 65
	}
	return false
}

// isMultisig is Solver's MatchMultisig: a required-signature count m in
// 1..20, then validly sized public keys, then their count n with m ≤ n ≤ 20
// (counts as OP_1..OP_16 or a minimal push), then OP_CHECKMULTISIG and
// nothing else.
func isMultisig(s []byte) bool {
	if len(s) < 1 || s[len(s)-1] != opCheckMultisig {
		return false
	}
	op, data, pc, ok := scriptOp(s, 0)
	if !ok {
		return false
	}
	required, ok := scriptNumber(op, data, 1, maxPubKeysPerMultisig)
	if !ok {
		return false
	}
	keys := 0
	for {
		op, data, pc, ok = scriptOp(s, pc)
		if !ok || !validPubKeySize(data) {
			break
		}
		keys++
	}
	if !ok {
		// Core: the failed GetOp leaves OP_INVALIDOPCODE and no data,
		// which is no number.
		return false
	}
	n, ok := scriptNumber(op, data, required, maxPubKeysPerMultisig)
	if !ok || n != keys {
		return false
	}
	return pc+1 == len(s)
}

// scriptNumber is Solver's GetScriptNumber: OP_1..OP_16, or a minimally
// pushed, minimally encoded script number of at most 4 bytes, in
// [lo, hi].
func scriptNumber(op byte, data []byte, lo, hi int) (int, bool) {
	var n int64
	switch {
	case op >= op1 && op <= op16:
		n = int64(op-op1) + 1
	case op > op0 && op <= opPushData4:
		if !minimalPush(op, data) || len(data) > 4 {
			return 0, false
		}
		if len(data) > 0 && data[len(data)-1]&0x7f == 0 &&
			(len(data) <= 1 || data[len(data)-2]&0x80 == 0) {
			return 0, false // not minimally encoded
		}
		for i := len(data) - 1; i >= 0; i-- {
			n = n<<8 | int64(data[i])
		}
		if len(data) > 0 && data[len(data)-1]&0x80 != 0 {
			n &^= int64(0x80) << (8 * (len(data) - 1))
			n = -n
		}
	default:
		return 0, false
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, false
	}
	return int(n), true
}

// minimalPush is Core's CheckMinimalPush for a push opcode.
func minimalPush(op byte, data []byte) bool {
	switch {
	case len(data) == 0:
		return op == op0
	case len(data) == 1 && data[0] >= 1 && data[0] <= 16:
		return false
	case len(data) == 1 && data[0] == 0x81:
		return false
	case len(data) <= 75:
		return int(op) == len(data)
	case len(data) <= 255:
		return op == opPushData1
	case len(data) <= 65535:
		return op == opPushData2
	}
	return true
}
