package v2conn

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// chunkReader returns its chunks one Read at a time, then err.
type chunkReader struct {
	chunks [][]byte
	err    error
	reads  int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, r.err
	}
	r.reads++
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

func (r *chunkReader) SetReadDeadline(time.Time) error { return nil }

func TestDetect(t *testing.T) {
	prefix := v1Prefix(testNet)
	key := bytes.Repeat([]byte{0x5a}, KeySize)
	wrongMagic := append([]byte{1, 2, 3, 4}, prefix[4:]...)
	for _, tc := range []struct {
		name      string
		chunks    [][]byte
		err       error
		transport Transport
		first     []byte
		wantErr   error
	}{
		{"v1 at once", [][]byte{append(prefix[:], 0x66, 0, 0, 0)}, io.EOF, V1, prefix[:], nil},
		{"v1 byte by byte", split(prefix[:]), io.EOF, V1, prefix[:], nil},
		{"v2 key", [][]byte{key}, io.EOF, V2, key[:PrefixSize], nil},
		{"v2 after matching magic", [][]byte{prefix[:4], {'v', 'x'}}, io.EOF, V2, append(prefix[:4:4], 'v', 'x'), nil},
		{"another network's v1 is v2 here", [][]byte{wrongMagic}, io.EOF, V2, wrongMagic, nil},
		{"v1 prefix then eof", [][]byte{prefix[:10]}, io.EOF, 0, prefix[:10], io.ErrUnexpectedEOF},
		{"nothing", nil, io.EOF, 0, nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &chunkReader{chunks: tc.chunks, err: tc.err}
			tr, first, err := Detect(r, testNet, time.Now().Add(testDeadline))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tr != tc.transport || !bytes.Equal(first, tc.first) {
				t.Fatalf("got %v %x, want %v %x", tr, first, tc.transport, tc.first)
			}
		})
	}
}

// Detect never reads past the 16 bytes of the prefix, so the v1 reader
// gets the rest of the stream untouched.
func TestDetectReadsNoMoreThanThePrefix(t *testing.T) {
	prefix := v1Prefix(testNet)
	stream := append(prefix[:], bytes.Repeat([]byte{9}, 100)...)
	r := &chunkReader{chunks: [][]byte{stream}, err: io.EOF}
	_, first, err := Detect(r, testNet, time.Now().Add(testDeadline))
	if err != nil || len(first) != PrefixSize {
		t.Fatalf("%x %v", first, err)
	}
	rest, _ := io.ReadAll(r)
	if len(rest) != 100 {
		t.Fatalf("%d bytes left, want 100", len(rest))
	}
}

// Over TCP: a v1 peer's whole version header survives Detect.
func TestDetectOverTCP(t *testing.T) {
	server, client := tcptest.Pair(t)
	prefix := v1Prefix(testNet)
	go func() { _, _ = client.Write(prefix[:]) }()
	tr, first, err := Detect(server, testNet, time.Now().Add(testDeadline))
	if err != nil || tr != V1 || !bytes.Equal(first, prefix[:]) {
		t.Fatalf("%v %x %v", tr, first, err)
	}
}

func split(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}
