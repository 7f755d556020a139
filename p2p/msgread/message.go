package msgread

// FromPayload treats one message that another transport has already read
// whole and authenticated (BIP-324 v2: command and payload, no header, no
// checksum) exactly as Reader.Next treats a v1 frame of the same command
// and payload: the command's cap (misbehaviour above it), what the
// connection's State calls for (handshake commands only before verack,
// relay and BIP-37 rules, *NotServedError), then DecodePayload. size is
// the message's bytes on the wire, reported as Frame.Size.
//
// The transport holds the bytes of payload (its receive budget and rate
// deadline apply before the payload is read), so the Frame's Release is a
// no-op; a payload not to be decoded is simply not looked at.
func FromPayload(command string, payload []byte, size int, st State) (Frame, error) {
	f := Frame{Command: command, Size: size, Release: noRelease}
	rule := ruleOf(command) // unknown commands: ignored, under the generic cap
	if uint64(len(payload)) > uint64(rule.maxPayload) {
		return f, misbehaving("%s payload of %d bytes over the cap of %d", command, len(payload), rule.maxPayload)
	}
	decode, err := rule.decides(command, uint32(len(payload)), st)
	if err != nil || !decode {
		return f, err
	}
	f.Msg, err = DecodePayload(command, payload, st.PVer)
	return f, err
}
