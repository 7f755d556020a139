package msgread

import (
	"bytes"
	"encoding/binary"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// rawHeader builds a frame header with a claimed payload length.
func rawHeader(net wire.BitcoinNet, cmd string, length uint32) []byte {
	b := make([]byte, wireframe.HeaderSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	copy(b[4:16], cmd)
	binary.LittleEndian.PutUint32(b[16:20], length)
	return b
}

// payloadOf serialises msg.
func payloadOf(msg wire.Message) []byte {
	var b bytes.Buffer
	_ = msg.BtcEncode(&b, wire.ProtocolVersion, wire.WitnessEncoding)
	return b.Bytes()
}

// encodeFrame serialises msg as a complete frame.
func encodeFrame(msg wire.Message, net wire.BitcoinNet, enc wire.MessageEncoding) []byte {
	var buf bytes.Buffer
	_, _ = wire.WriteMessageWithEncodingN(&buf, msg, wire.ProtocolVersion, net, enc)
	return buf.Bytes()
}
