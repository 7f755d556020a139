package corefixture

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Block is one recorded block.
type Block struct {
	Height int32
	Label  string // e.g. "fanout-many-outputs", "stale-a"
	Hash   chainhash.Hash
	Stale  bool // not on the active chain at the end of the recording
	// Derived marks genesis and h1–h94, rebuilt rather than recorded (see
	// the package doc); their HeaderJSON and Verbose3 are reduced replies.
	Derived bool
	// Raw is getblock <hash> 0, decoded from hex.
	Raw []byte
	// Verbose3 is the exact result of getblock <hash> 3.
	Verbose3 []byte
	// HeaderJSON is getblockheader <hash> true; FilterJSON is
	// getblockfilter <hash> basic.
	HeaderJSON, FilterJSON []byte
	// RESTBlock and RESTSpent are the recorded /rest/block/<hash>.bin and
	// /rest/spenttxouts/<hash>.bin bodies (nil for h95–h100).
	RESTBlock, RESTSpent []byte
	// SpentJSON is /rest/spenttxouts/<hash>.json (nil for h95–h100).
	SpentJSON []byte
}

// MsgBlock decodes Raw.
func (b *Block) MsgBlock() (*wire.MsgBlock, error) {
	var m wire.MsgBlock
	if err := m.Deserialize(bytes.NewReader(b.Raw)); err != nil {
		return nil, fmt.Errorf("block %s: %w", b.Hash, err)
	}
	return &m, nil
}

// Name is "h0102-fanout-many-outputs", the fixture file prefix.
func (b *Block) Name() string { return fmt.Sprintf("h%04d-%s", b.Height, b.Label) }

type restReply struct {
	status      int
	contentType string
	body        []byte
}

// Fixtures is the loaded recording.
type Fixtures struct {
	Dir string
	// Blocks with full per-block fixtures (h95–h115 and the two stale
	// blocks), ordered by height, active before stale.
	Blocks []*Block
	// Early holds genesis and h1–h94, derived and verified against the
	// recorded hashes, in height order.
	Early []*Block
	// Tip is the recorded best block hash (h115).
	Tip chainhash.Hash
	// Genesis is the regtest genesis hash.
	Genesis chainhash.Hash
	// Cookie is the sanitized cookie file content ("__cookie__:0123…").
	Cookie string

	byHash   map[chainhash.Hash]*Block
	active   map[int64]chainhash.Hash           // height → hash, 0..115
	filters  map[chainhash.Hash]json.RawMessage // getblockfilter results
	chain    map[string][]byte                  // rpc/chain/<method>.json
	rest     map[string]restReply               // exact URL → reply
	txs      map[chainhash.Hash][]byte          // derived getrawtransaction
	spentBin map[chainhash.Hash][]byte          // derived spenttxouts .bin for blocks without a recording
}

// DefaultDir returns testdata/bitcoind-v31-regtest of this module.
func DefaultDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "bitcoind-v31-regtest")
}

// Load loads DefaultDir or fails tb.
func Load(tb testing.TB) *Fixtures {
	tb.Helper()
	fx, err := LoadDir(DefaultDir())
	if err != nil {
		tb.Fatalf("corefixture: %v", err)
	}
	return fx
}

// BlockByHash returns the recorded block with hash.
func (fx *Fixtures) BlockByHash(h chainhash.Hash) (*Block, bool) {
	b, ok := fx.byHash[h]
	return b, ok
}

// ActiveChain returns the active chain h0–h115 in height order: Early,
// then the non-stale recorded blocks.
func (fx *Fixtures) ActiveChain() []*Block {
	out := append([]*Block(nil), fx.Early...)
	for _, b := range fx.Blocks {
		if !b.Stale {
			out = append(out, b)
		}
	}
	return out
}

// AllBlocks returns every block the fixtures serve: the recorded blocks
// (the stale ones included), then Early.
func (fx *Fixtures) AllBlocks() []*Block {
	return append(append([]*Block(nil), fx.Blocks...), fx.Early...)
}

// ActiveHash returns the active-chain hash at height (0..115).
func (fx *Fixtures) ActiveHash(height int64) (chainhash.Hash, bool) {
	h, ok := fx.active[height]
	return h, ok
}

// RawTx returns the derived serialized transaction with txid.
func (fx *Fixtures) RawTx(txid chainhash.Hash) ([]byte, bool) {
	b, ok := fx.txs[txid]
	return b, ok
}

var blockFile = regexp.MustCompile(`^h(\d{4})-(.+)\.getblock-v0\.hex$`)

// LoadDir reads the recording in dir.
func LoadDir(dir string) (*Fixtures, error) {
	fx := &Fixtures{
		Dir:      dir,
		byHash:   make(map[chainhash.Hash]*Block),
		active:   make(map[int64]chainhash.Hash),
		filters:  make(map[chainhash.Hash]json.RawMessage),
		chain:    make(map[string][]byte),
		rest:     make(map[string]restReply),
		txs:      make(map[chainhash.Hash][]byte),
		spentBin: make(map[chainhash.Hash][]byte),
	}
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, rel)) }

	cookie, err := read("cookie/regtest.cookie.sanitized")
	if err != nil {
		return nil, err
	}
	fx.Cookie = string(cookie)

	entries, err := os.ReadDir(filepath.Join(dir, "rpc", "blocks"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := blockFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		height, _ := strconv.Atoi(m[1])
		b := &Block{Height: int32(height), Label: m[2], Stale: strings.HasPrefix(m[2], "stale")}
		prefix := "rpc/blocks/" + b.Name()
		rawHex, err := read(prefix + ".getblock-v0.hex")
		if err != nil {
			return nil, err
		}
		if b.Raw, err = hex.DecodeString(strings.TrimSpace(string(rawHex))); err != nil {
			return nil, fmt.Errorf("%s: %w", prefix, err)
		}
		if len(b.Raw) < 80 {
			return nil, fmt.Errorf("%s: short block", prefix)
		}
		b.Hash = chainhash.DoubleHashH(b.Raw[:80])
		if b.Verbose3, err = read(prefix + ".getblock-v3.json"); err != nil {
			return nil, err
		}
		if b.HeaderJSON, err = read(prefix + ".getblockheader.json"); err != nil {
			return nil, err
		}
		if b.FilterJSON, err = read(prefix + ".getblockfilter-basic.json"); err != nil {
			return nil, err
		}
		restPrefix := "rest/blocks/" + b.Name()
		b.RESTBlock, _ = read(restPrefix + ".block.bin")
		b.RESTSpent, _ = read(restPrefix + ".spenttxouts.bin")
		b.SpentJSON, _ = read(restPrefix + ".spenttxouts.json")
		fx.Blocks = append(fx.Blocks, b)
		fx.byHash[b.Hash] = b
		fx.filters[b.Hash] = b.FilterJSON
		if !b.Stale {
			fx.active[int64(b.Height)] = b.Hash
		}
	}
	sort.SliceStable(fx.Blocks, func(i, j int) bool {
		if fx.Blocks[i].Height != fx.Blocks[j].Height {
			return fx.Blocks[i].Height < fx.Blocks[j].Height
		}
		return !fx.Blocks[i].Stale && fx.Blocks[j].Stale
	})

	// Heights 0..94: hash and getblockfilter only.
	var early map[string]struct {
		Hash   string          `json:"hash"`
		Filter json.RawMessage `json:"getblockfilter"`
	}
	raw, err := read("rpc/heights-0000-0094.hash-and-getblockfilter.json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &early); err != nil {
		return nil, fmt.Errorf("heights file: %w", err)
	}
	for k, v := range early {
		height, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("heights file: key %q", k)
		}
		h, err := chainhash.NewHashFromStr(v.Hash)
		if err != nil {
			return nil, fmt.Errorf("heights file: %w", err)
		}
		fx.active[height] = *h
		fx.filters[*h] = v.Filter
	}
	fx.Genesis = fx.active[0]

	chainFiles, err := filepath.Glob(filepath.Join(dir, "rpc", "chain", "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range chainFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fx.chain[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	var tip string
	if err := json.Unmarshal(fx.chain["getbestblockhash"], &tip); err != nil {
		return nil, fmt.Errorf("getbestblockhash.json: %w", err)
	}
	th, err := chainhash.NewHashFromStr(tip)
	if err != nil {
		return nil, err
	}
	fx.Tip = *th

	if err := fx.loadREST(); err != nil {
		return nil, err
	}
	if err := fx.deriveTxs(); err != nil {
		return nil, err
	}
	return fx, nil
}

func (fx *Fixtures) loadREST() error {
	raw, err := os.ReadFile(filepath.Join(fx.Dir, "rest", "INDEX.json"))
	if err != nil {
		return err
	}
	var index []struct {
		URL         string `json:"url"`
		Status      int    `json:"status"`
		ContentType string `json:"content_type"`
		File        string `json:"file"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return fmt.Errorf("rest/INDEX.json: %w", err)
	}
	for _, e := range index {
		var body []byte
		if strings.HasSuffix(e.File, ".http.json") {
			ex, err := LoadExchange(filepath.Join(fx.Dir, e.File))
			if err != nil {
				return err
			}
			body = ex.Body
		} else if body, err = os.ReadFile(filepath.Join(fx.Dir, e.File)); err != nil {
			return err
		}
		fx.rest[e.URL] = restReply{status: e.Status, contentType: e.ContentType, body: body}
	}
	return nil
}
