package corefixture

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ZMQMessage is one line of zmq/zmq-capture.jsonl.
type ZMQMessage struct {
	Index int
	Topic string
	Body  []byte
	Seq   uint32
	Phase string
}

// Frames returns the three frames Core sends: topic, body, 4-byte
// little-endian sequence number.
func (m ZMQMessage) Frames() [][]byte {
	seq := make([]byte, 4)
	binary.LittleEndian.PutUint32(seq, m.Seq)
	return [][]byte{[]byte(m.Topic), m.Body, seq}
}

// ZMQCapture reads the captured ZMQ messages in receive order.
func (fx *Fixtures) ZMQCapture() ([]ZMQMessage, error) {
	f, err := os.Open(filepath.Join(fx.Dir, "zmq", "zmq-capture.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ZMQMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			I       int    `json:"i"`
			Topic   string `json:"topic"`
			BodyHex string `json:"body_hex"`
			SeqHex  string `json:"seq_hex"`
			Phase   string `json:"phase"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("zmq capture line %d: %w", len(out)+1, err)
		}
		body, err := hex.DecodeString(rec.BodyHex)
		if err != nil {
			return nil, fmt.Errorf("zmq capture line %d: %w", len(out)+1, err)
		}
		seq, err := hex.DecodeString(rec.SeqHex)
		if err != nil || len(seq) != 4 {
			return nil, fmt.Errorf("zmq capture line %d: bad seq_hex %q", len(out)+1, rec.SeqHex)
		}
		out = append(out, ZMQMessage{Index: rec.I, Topic: rec.Topic, Body: body, Seq: binary.LittleEndian.Uint32(seq), Phase: rec.Phase})
	}
	return out, sc.Err()
}
