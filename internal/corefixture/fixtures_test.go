package corefixture

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/lightninglabs/gozmq"
)

func TestLoadMatchesManifest(t *testing.T) {
	fx := Load(t)
	if got, want := len(fx.Blocks), 23; got != want { // h95–h115 + 2 stale
		t.Fatalf("blocks: got %d, want %d", got, want)
	}
	if fx.Tip.String() != "4474bc8d5b2033a2e5db6fcc8c018dea5faca38d99b0535a41560c3ec29e6452" {
		t.Fatalf("tip %s", fx.Tip)
	}
	for _, b := range fx.Blocks {
		if b.RESTBlock != nil && !bytes.Equal(b.RESTBlock, b.Raw) {
			t.Errorf("%s: REST block differs from getblock 0", b.Name())
		}
		if (b.RESTSpent == nil) != (b.Height < 101) {
			t.Errorf("%s: REST spenttxouts recorded=%v", b.Name(), b.RESTSpent != nil)
		}
	}
}

// Every outpoint spent by a recorded block resolves to a derived
// transaction whose hash is the outpoint's txid (LoadDir checks presence;
// this pins the hash check, which is what makes the rebuilt coinbases
// trustworthy).
func TestDerivedTransactionsHashToTheirTxid(t *testing.T) {
	fx := Load(t)
	n := 0
	for _, b := range fx.Blocks {
		blk, err := b.MsgBlock()
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range blk.Transactions[1:] {
			for _, in := range tx.TxIn {
				if _, ok := fx.RawTx(in.PreviousOutPoint.Hash); !ok {
					t.Fatalf("%s spends %s: not derived", b.Name(), in.PreviousOutPoint)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no inputs checked")
	}
}

func TestPublisherSpeaksToGozmq(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub := NewPublisher(t)
	conn, err := gozmq.Subscribe(pub.Endpoint(), []string{"hashblock"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := pub.WaitSubscribed(ctx, "hashblock", 1); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, 1000) // long-form frame
	if n, err := pub.Publish([]byte("rawblock"), big, []byte{1, 0, 0, 0}); err != nil || n != 0 {
		t.Fatalf("unsubscribed topic delivered to %d (%v)", n, err)
	}
	if n, err := pub.Publish([]byte("hashblock"), big, []byte{1, 0, 0, 0}); err != nil || n != 1 {
		t.Fatalf("publish: %d, %v", n, err)
	}
	parts, err := conn.Receive(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || string(parts[0]) != "hashblock" || !bytes.Equal(parts[1], big) {
		t.Fatalf("got %d parts, topic %q", len(parts), parts[0])
	}
}

func TestZMQCaptureIsContiguousPerTopic(t *testing.T) {
	msgs, err := Load(t).ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	last := map[string]uint32{}
	for _, m := range msgs {
		if prev, ok := last[m.Topic]; ok && m.Seq != prev+1 {
			t.Errorf("%s: seq %d after %d", m.Topic, m.Seq, prev)
		}
		last[m.Topic] = m.Seq
		counts[m.Topic]++
	}
	if counts["hashblock"] != 16 || counts["sequence"] != 82 || counts["rawblock"] != 16 {
		t.Fatalf("counts %v", counts)
	}
}

// The derived blocks h0–h94 and the recorded ones form one linked chain
// whose every hash is the recorded active hash at that height.
func TestActiveChainIsComplete(t *testing.T) {
	fx := Load(t)
	chain := fx.ActiveChain()
	if len(chain) != 116 {
		t.Fatalf("active chain has %d blocks, want 116", len(chain))
	}
	for h, b := range chain {
		want, _ := fx.ActiveHash(int64(h))
		blk, err := b.MsgBlock()
		if err != nil {
			t.Fatal(err)
		}
		if b.Hash != want || blk.BlockHash() != want || int(b.Height) != h {
			t.Fatalf("height %d: %s (%s), want %s", h, b.Hash, b.Name(), want)
		}
		if h > 0 && blk.Header.PrevBlock != chain[h-1].Hash {
			t.Fatalf("height %d does not link to %d", h, h-1)
		}
		if b.Derived != (h < 95) {
			t.Fatalf("height %d: Derived=%v", h, b.Derived)
		}
	}
}

// SetActiveTip replays the state before the recorded reorg (tip = stale
// h114) and after it.
func TestServerSetActiveTip(t *testing.T) {
	fx := Load(t)
	srv := NewServer(t, fx, Options{})
	staleB, _ := chainhash.NewHashFromStr("03202cb16dff5341c266fbc912d2da37d85d7e5b0997e49d2fcb7cd8b8ebde39")
	staleA, _ := chainhash.NewHashFromStr("42987b4b368c7574afe60a3480e0094ec1d3c507821d2031c585c64975ab275a")
	if err := srv.SetActiveTip(*staleB); err != nil {
		t.Fatal(err)
	}
	call := func(method string, params ...any) json.RawMessage {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "1.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, srv.URL(), bytes.NewReader(body))
		req.SetBasicAuth("__cookie__", strings.TrimPrefix(fx.Cookie, "__cookie__:"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			t.Fatal(err)
		}
		return env.Result
	}
	if got := string(call("getbestblockhash")); got != `"`+staleB.String()+`"` {
		t.Fatalf("best %s", got)
	}
	if got := string(call("getblockhash", 113)); got != `"`+staleA.String()+`"` {
		t.Fatalf("height 113 %s", got)
	}
	var hdr struct {
		Confirmations int64  `json:"confirmations"`
		Next          string `json:"nextblockhash"`
	}
	h112, _ := fx.ActiveHash(112)
	_ = json.Unmarshal(call("getblockheader", h112.String(), true), &hdr)
	if hdr.Confirmations != 3 || hdr.Next != staleA.String() {
		t.Fatalf("h112 before reorg: %+v", hdr)
	}
	_ = json.Unmarshal(call("getblockheader", fx.Tip.String(), true), &hdr)
	if hdr.Confirmations != -1 {
		t.Fatalf("final tip before reorg: %+v", hdr)
	}
	if err := srv.SetActiveTip(fx.Tip); err != nil {
		t.Fatal(err)
	}
	hdr.Next = ""
	_ = json.Unmarshal(call("getblockheader", staleA.String(), true), &hdr)
	if hdr.Confirmations != -1 || hdr.Next != "" {
		t.Fatalf("stale-a after reorg: %+v", hdr)
	}
	if err := srv.SetActiveTip(chainhash.Hash{1}); err == nil {
		t.Fatal("unknown tip accepted")
	}
}
