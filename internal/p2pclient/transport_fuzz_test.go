package p2pclient

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// fuzzCommands are the commands a fuzzed v2 peer sends: those the client
// decodes, answers or skips, and one wire does not know.
var fuzzCommands = []string{
	wire.CmdPing, wire.CmdVersion, wire.CmdHeaders, wire.CmdCFilter, wire.CmdCFHeaders, wire.CmdCFCheckpt,
	wire.CmdTx, wire.CmdBlock, wire.CmdMerkleBlock, wire.CmdInv, wire.CmdNotFound, wire.CmdReject, "unknowncmd",
}

// FuzzReadOverV2: a v2 peer sends messages made from records (a command
// index, a 2-byte payload length, the payload), and the client reads them
// in turn with ReadMessage, ReadFrame, ReadRaw and Skip: nothing panics,
// whatever the payloads declare, and the reads end when the peer does.
func FuzzReadOverV2(f *testing.F) {
	f.Add([]byte{0, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 2, 1, 0, 0xfd})
	f.Add([]byte{7, 0, 1, 0xff, 3, 4, 1, 2, 3, 4})
	f.Add([]byte{11, 3, 0, 2, 'x', 'y'})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer ln.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(testDeadline)); err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		defer func() { <-served }()
		maxReads := len(data)/3 + 2
		go func(data []byte) {
			defer close(served)
			server, err := ln.Accept()
			if err != nil {
				return
			}
			defer server.Close()
			_ = server.SetDeadline(time.Now().Add(testDeadline))
			cfg := v2conn.DefaultConfig(testMagic)
			cfg.MaxGarbage = 0
			tr, first, err := v2conn.Detect(server, testMagic, time.Now().Add(testDeadline))
			if err != nil || tr != v2conn.V2 {
				return
			}
			c, err := v2conn.Accept(context.Background(), server, first, cfg)
			if err != nil {
				return
			}
			go func() { // drop the client's pongs
				for {
					if _, err := c.ReadMessage(); err != nil {
						return
					}
				}
			}()
			for len(data) >= 3 {
				cmd := fuzzCommands[int(data[0])%len(fuzzCommands)]
				n := min(int(binary.LittleEndian.Uint16(data[1:3])), len(data)-3)
				if _, err := c.WriteMessage(cmd, data[3:3+n]); err != nil {
					return
				}
				data = data[3+n:]
			}
		}(data)
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		_ = client.SetDeadline(time.Now().Add(testDeadline))
		opts := ConnOptions{Timeout: testDeadline}
		c := &Conn{nc: client, net: testMagic, pver: wire.ProtocolVersion}
		c.counted = &countingConn{Conn: client, c: c}
		v2, err := v2conn.Initiate(context.Background(), c.counted, v2Config(testMagic, opts))
		if err != nil {
			t.Fatal(err)
		}
		c.v2 = v2
		for i := 0; ; i++ {
			if i > maxReads {
				t.Fatalf("%d reads and the peer's messages have not ended", i)
			}
			var err error
			switch i % 4 {
			case 0:
				_, err = c.ReadMessage()
			case 1:
				_, err = c.ReadFrame(wire.CmdCFilter, wire.CmdHeaders)
			case 2:
				_, err = c.ReadRaw(1000)
			case 3:
				_, _, err = c.Skip()
			}
			// Other errors (a payload over its command's cap, one wire
			// cannot decode) leave the connection readable.
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				return
			}
		}
	})
}
