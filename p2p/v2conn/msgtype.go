package v2conn

import "bytes"

// CommandSize is the length of a long-form message type: a v1 command,
// padded with NULs.
const CommandSize = 12

// longTypeSize is the encoded length of a long-form message type: the
// zero byte that announces it and the padded command.
const longTypeSize = 1 + CommandSize

// shortID returns BIP-324's one-byte message type of command, or 0 when
// the command has none and travels in the long form. The table is BIP-324's
// (IDs 1 to 28); IDs 29 to 255 are unassigned.
func shortID(command string) byte {
	switch command {
	case "addr":
		return 1
	case "block":
		return 2
	case "blocktxn":
		return 3
	case "cmpctblock":
		return 4
	case "feefilter":
		return 5
	case "filteradd":
		return 6
	case "filterclear":
		return 7
	case "filterload":
		return 8
	case "getblocks":
		return 9
	case "getblocktxn":
		return 10
	case "getdata":
		return 11
	case "getheaders":
		return 12
	case "headers":
		return 13
	case "inv":
		return 14
	case "mempool":
		return 15
	case "merkleblock":
		return 16
	case "notfound":
		return 17
	case "ping":
		return 18
	case "pong":
		return 19
	case "sendcmpct":
		return 20
	case "tx":
		return 21
	case "getcfilters":
		return 22
	case "cfilter":
		return 23
	case "getcfheaders":
		return 24
	case "cfheaders":
		return 25
	case "getcfcheckpt":
		return 26
	case "cfcheckpt":
		return 27
	case "addrv2":
		return 28
	}
	return 0
}

// shortCommand is the inverse of shortID: the command of a one-byte
// message type, or "" for an unassigned ID (and for 0).
func shortCommand(id byte) string {
	switch id {
	case 1:
		return "addr"
	case 2:
		return "block"
	case 3:
		return "blocktxn"
	case 4:
		return "cmpctblock"
	case 5:
		return "feefilter"
	case 6:
		return "filteradd"
	case 7:
		return "filterclear"
	case 8:
		return "filterload"
	case 9:
		return "getblocks"
	case 10:
		return "getblocktxn"
	case 11:
		return "getdata"
	case 12:
		return "getheaders"
	case 13:
		return "headers"
	case 14:
		return "inv"
	case 15:
		return "mempool"
	case 16:
		return "merkleblock"
	case 17:
		return "notfound"
	case 18:
		return "ping"
	case 19:
		return "pong"
	case 20:
		return "sendcmpct"
	case 21:
		return "tx"
	case 22:
		return "getcfilters"
	case 23:
		return "cfilter"
	case 24:
		return "getcfheaders"
	case 25:
		return "cfheaders"
	case 26:
		return "getcfcheckpt"
	case 27:
		return "cfcheckpt"
	case 28:
		return "addrv2"
	}
	return ""
}

// internLong returns the commands without a short ID that the server sends
// or reads as constant strings, so decoding them does not allocate.
func internLong(cmd []byte) string {
	switch string(cmd) {
	case "version":
		return "version"
	case "verack":
		return "verack"
	case "sendheaders":
		return "sendheaders"
	case "wtxidrelay":
		return "wtxidrelay"
	case "sendaddrv2":
		return "sendaddrv2"
	case "getaddr":
		return "getaddr"
	}
	return string(cmd)
}

// validCommand reports whether cmd is a command v1 could carry: 1 to 12
// bytes of printable ASCII.
func validCommand[T string | []byte](cmd T) bool {
	if len(cmd) == 0 || len(cmd) > CommandSize {
		return false
	}
	for i := range len(cmd) {
		if cmd[i] < 0x20 || cmd[i] > 0x7e {
			return false
		}
	}
	return true
}

// TypeSize returns the length of command's encoded message type: 1 for a
// command with a short ID, 13 for the long form.
func TypeSize(command string) int {
	if shortID(command) != 0 {
		return 1
	}
	return longTypeSize
}

// AppendType appends the v2 message type of command to dst: its one-byte
// short ID, or a zero byte and the command padded with NULs to 12 bytes.
// The command must be valid (1 to 12 bytes of printable ASCII); ok is
// false, and dst unchanged, otherwise.
func AppendType(dst []byte, command string) (_ []byte, ok bool) {
	if id := shortID(command); id != 0 {
		return append(dst, id), true
	}
	if !validCommand(command) {
		return dst, false
	}
	dst = append(dst, 0)
	dst = append(dst, command...)
	var pad [CommandSize]byte
	return append(dst, pad[:CommandSize-len(command)]...), true
}

// DecodeType splits a packet's contents into its command and payload (a
// slice of contents). ok is false when the contents carry no valid message
// type: empty contents, an unassigned short ID, a long form shorter than 13
// bytes, or a command that is empty, not printable ASCII or not padded
// with NULs only. Core drops such a message and keeps the peer.
func DecodeType(contents []byte) (command string, payload []byte, ok bool) {
	if len(contents) == 0 {
		return "", nil, false
	}
	if id := contents[0]; id != 0 {
		cmd := shortCommand(id)
		return cmd, contents[1:], cmd != ""
	}
	if len(contents) < longTypeSize {
		return "", nil, false
	}
	field := contents[1:longTypeSize]
	n := bytes.IndexByte(field, 0)
	if n < 0 {
		n = CommandSize
	}
	for _, c := range field[n:] {
		if c != 0 {
			return "", nil, false
		}
	}
	if !validCommand(field[:n]) {
		return "", nil, false
	}
	return internLong(field[:n]), contents[longTypeSize:], true
}
