package corefiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Core's file sizes (src/node/blockstorage.h).
const (
	// MaxBlockFileSize is MAX_BLOCKFILE_SIZE: a block goes to the next
	// file when its record would make the current one reach this size.
	MaxBlockFileSize = 128 << 20
	// BlockFileChunk and UndoFileChunk are the preallocation steps of blk
	// and rev files (BLOCKFILE_CHUNK_SIZE, UNDOFILE_CHUNK_SIZE).
	BlockFileChunk = 16 << 20
	UndoFileChunk  = 1 << 20
)

// DefaultReorgDepth is how many of the newest connected blocks a Writer
// keeps so that a later block can build on a branch that forks below the
// current tip.
const DefaultReorgDepth = 100

// Options tunes a Writer. The zero value writes what Core v28+ writes, with
// a zero (no-op) key.
type Options struct {
	// Key obfuscates every written byte: the byte at file offset i is
	// XORed with Key[i%8]. Zero leaves the files plain.
	Key [8]byte
	// NoXORFile writes no xor.dat, as Core before v28 (Key must be zero).
	NoXORFile bool
	// MaxFileSize overrides MaxBlockFileSize, so tests can get several
	// file pairs from a small chain. Zero means MaxBlockFileSize.
	MaxFileSize int64
	// BlockChunk and UndoChunk override the preallocation steps; zero
	// means Core's, negative means no preallocation (files end at their
	// last record).
	BlockChunk, UndoChunk int64
	// ReorgDepth is how deep a fork below the current tip may be; zero
	// means DefaultReorgDepth.
	ReorgDepth int
}

// Location is where a written block and its undo data are.
type Location struct {
	Hash   chainhash.Hash
	Height int32
	File   int
	// DataPos and UndoPos are the offsets of the block and of its
	// CBlockUndo, 8 bytes past their records' starts, as Core's block
	// index has them; UndoPos is -1 for genesis, which has no undo data.
	DataPos, UndoPos int64
}

// blockState is what the writer keeps about a written block.
type blockState struct {
	height int32
	parent chainhash.Hash
	// block and undo are kept for the newest ReorgDepth connected blocks
	// (to disconnect and reconnect them); nil beyond.
	block *wire.MsgBlock
	undo  [][]Coin
}

// Writer appends blocks to a blocks directory in Core's format. Not safe
// for concurrent use.
type Writer struct {
	dir    string
	params *chaincfg.Params
	opts   Options
	magic  [4]byte

	file             int
	blk, rev         *os.File
	blkUsed, revUsed int64

	utxo      map[wire.OutPoint]Coin
	blocks    map[chainhash.Hash]*blockState
	tip       chainhash.Hash
	connected []chainhash.Hash // the active chain's newest blocks, oldest first (bounded)
	locations []Location
	buf       []byte
}

// NewWriter creates dir (which must not hold a blk00000.dat yet) and, unless
// opts.NoXORFile, its xor.dat.
func NewWriter(dir string, params *chaincfg.Params, opts Options) (*Writer, error) {
	if opts.NoXORFile && opts.Key != ([8]byte{}) {
		return nil, errors.New("corefiles: NoXORFile needs a zero key")
	}
	if opts.MaxFileSize == 0 {
		opts.MaxFileSize = MaxBlockFileSize
	}
	if opts.BlockChunk == 0 {
		opts.BlockChunk = BlockFileChunk
	}
	if opts.UndoChunk == 0 {
		opts.UndoChunk = UndoFileChunk
	}
	if opts.ReorgDepth <= 0 {
		opts.ReorgDepth = DefaultReorgDepth
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "blk00000.dat")); err == nil {
		return nil, fmt.Errorf("corefiles: %s already holds block files", dir)
	}
	if !opts.NoXORFile {
		if err := os.WriteFile(filepath.Join(dir, "xor.dat"), opts.Key[:], 0o644); err != nil {
			return nil, err
		}
	}
	w := &Writer{
		dir: dir, params: params, opts: opts,
		utxo:   map[wire.OutPoint]Coin{},
		blocks: map[chainhash.Hash]*blockState{},
	}
	binary.LittleEndian.PutUint32(w.magic[:], uint32(params.Net))
	if err := w.openFiles(0); err != nil {
		return nil, err
	}
	return w, nil
}

// Write writes blocks, in the order Core stored them, to a new blocks
// directory dir and returns where each went. The first block must be the
// chain's genesis block; every other one must build on a block before it.
func Write(dir string, params *chaincfg.Params, blocks []*wire.MsgBlock, opts Options) ([]Location, error) {
	w, err := NewWriter(dir, params, opts)
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		if err := w.AddBlock(b); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w.Locations(), w.Close()
}

// Locations returns where every block added so far went, in order.
func (w *Writer) Locations() []Location { return w.locations }

// Files returns how many blk/rev file pairs were started.
func (w *Writer) Files() int { return w.file + 1 }

func (w *Writer) path(prefix string, n int) string {
	return filepath.Join(w.dir, fmt.Sprintf("%s%05d.dat", prefix, n))
}

func (w *Writer) openFiles(n int) error {
	var err error
	if w.blk, err = os.OpenFile(w.path("blk", n), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return err
	}
	if w.rev, err = os.OpenFile(w.path("rev", n), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return err
	}
	w.file, w.blkUsed, w.revUsed = n, 0, 0
	return nil
}

// finishFiles truncates the current pair to its used size, as Core does
// with the files it leaves (FlushBlockFile with finalize), and closes it.
func (w *Writer) finishFiles(truncate bool) error {
	var errs []error
	if truncate {
		errs = append(errs, w.blk.Truncate(w.blkUsed), w.rev.Truncate(w.revUsed))
	}
	errs = append(errs, w.blk.Close(), w.rev.Close())
	return errors.Join(errs...)
}

// Close finishes the files; the last pair keeps its zero padding.
func (w *Writer) Close() error {
	if w.blk == nil {
		return nil
	}
	err := w.finishFiles(false)
	w.blk, w.rev = nil, nil
	return err
}

// AddBlock stores blk as the next block record and connects it on top of
// its parent (disconnecting and reconnecting blocks when the parent is not
// the current tip), writing its undo data to the rev file of the same
// number. Genesis has no undo data, and its outputs are unspendable.
func (w *Writer) AddBlock(blk *wire.MsgBlock) error {
	var raw bytes.Buffer
	raw.Grow(blk.SerializeSize())
	if err := blk.Serialize(&raw); err != nil {
		return err
	}
	hash := blk.BlockHash()
	if _, dup := w.blocks[hash]; dup {
		return fmt.Errorf("corefiles: block %s added twice", hash)
	}
	st := &blockState{parent: blk.Header.PrevBlock}
	if len(w.blocks) == 0 {
		if hash != *w.params.GenesisHash {
			return fmt.Errorf("corefiles: first block %s is not %s's genesis", hash, w.params.Name)
		}
	} else {
		parent, ok := w.blocks[blk.Header.PrevBlock]
		if !ok {
			return fmt.Errorf("corefiles: block %s builds on unknown block %s", hash, blk.Header.PrevBlock)
		}
		st.height = parent.height + 1
	}

	// Core starts a new file when this record would reach the maximum.
	add := int64(raw.Len()) + 8
	if w.blkUsed > 0 && w.blkUsed+add >= w.opts.MaxFileSize {
		if err := w.finishFiles(true); err != nil {
			return err
		}
		if err := w.openFiles(w.file + 1); err != nil {
			return err
		}
	}
	dataPos, err := w.appendRecord(w.blk, &w.blkUsed, w.opts.BlockChunk, raw.Bytes(), nil)
	if err != nil {
		return err
	}
	loc := Location{Hash: hash, Height: st.height, File: w.file, DataPos: dataPos, UndoPos: -1}
	w.blocks[hash] = st

	if len(w.blocks) == 1 {
		w.pushConnected(hash)
		w.locations = append(w.locations, loc)
		return nil
	}
	if err := w.reorgTo(blk.Header.PrevBlock); err != nil {
		return fmt.Errorf("corefiles: block %s: %w", hash, err)
	}
	undo, err := w.connect(blk, st.height)
	if err != nil {
		return fmt.Errorf("corefiles: block %s: %w", hash, err)
	}
	st.block, st.undo = blk, undo
	w.pushConnected(hash)
	payload := AppendBlockUndo(w.buf[:0], undo)
	w.buf = payload
	sum := undoChecksum(blk.Header.PrevBlock, payload)
	if loc.UndoPos, err = w.appendRecord(w.rev, &w.revUsed, w.opts.UndoChunk, payload, sum[:]); err != nil {
		return err
	}
	w.locations = append(w.locations, loc)
	return nil
}

// appendRecord writes magic, size, payload and trailer at *used in f,
// obfuscated by file offset, preallocating in chunks as Core does, and
// returns the payload's offset.
func (w *Writer) appendRecord(f *os.File, used *int64, chunk int64, payload, trailer []byte) (int64, error) {
	start := *used
	rec := make([]byte, 0, 8+len(payload)+len(trailer))
	rec = appendRecordHeader(rec, w.magic, len(payload))
	rec = append(rec, payload...)
	rec = append(rec, trailer...)
	end := start + int64(len(rec))
	if chunk > 0 {
		oldChunks := (start + chunk - 1) / chunk
		newChunks := (end + chunk - 1) / chunk
		if newChunks > oldChunks {
			// Raw zero bytes, as posix_fallocate leaves them.
			if err := f.Truncate(newChunks * chunk); err != nil {
				return 0, err
			}
		}
	}
	for i := range rec {
		rec[i] ^= w.opts.Key[(start+int64(i))%8]
	}
	if _, err := f.WriteAt(rec, start); err != nil {
		return 0, err
	}
	*used = end
	return start + 8, nil
}

// undoChecksum is SHA256d(parent hash ‖ CBlockUndo), written after every
// undo record.
func undoChecksum(parent chainhash.Hash, undo []byte) chainhash.Hash {
	h := sha256.New()
	h.Write(parent[:])
	h.Write(undo)
	first := h.Sum(nil)
	return chainhash.Hash(sha256.Sum256(first))
}

// unspendable reports whether Core keeps an output out of the UTXO set
// (CScript::IsUnspendable: OP_RETURN first, or longer than MAX_SCRIPT_SIZE).
func unspendable(script []byte) bool {
	return (len(script) > 0 && script[0] == 0x6a) || len(script) > 10000
}

// connect applies blk (at height) to the UTXO set and returns its undo
// data: the coins each non-coinbase transaction spends, outputs of earlier
// transactions of the same block included.
func (w *Writer) connect(blk *wire.MsgBlock, height int32) ([][]Coin, error) {
	undo := make([][]Coin, 0, len(blk.Transactions)-1)
	for i, tx := range blk.Transactions {
		if i > 0 {
			coins := make([]Coin, len(tx.TxIn))
			for j, in := range tx.TxIn {
				c, ok := w.utxo[in.PreviousOutPoint]
				if !ok {
					return nil, fmt.Errorf("tx %d input %d spends %s, which is not unspent", i, j, in.PreviousOutPoint)
				}
				delete(w.utxo, in.PreviousOutPoint)
				coins[j] = c
			}
			undo = append(undo, coins)
		}
		txid := tx.TxHash()
		for vout, out := range tx.TxOut {
			if unspendable(out.PkScript) {
				continue
			}
			w.utxo[wire.OutPoint{Hash: txid, Index: uint32(vout)}] = Coin{Value: out.Value, Script: out.PkScript, Height: height, Coinbase: i == 0}
		}
	}
	return undo, nil
}

// disconnect undoes blk with its undo data.
func (w *Writer) disconnect(blk *wire.MsgBlock, undo [][]Coin) {
	for i := len(blk.Transactions) - 1; i >= 0; i-- {
		tx := blk.Transactions[i]
		txid := tx.TxHash()
		for vout := range tx.TxOut {
			delete(w.utxo, wire.OutPoint{Hash: txid, Index: uint32(vout)})
		}
		if i > 0 {
			for j, in := range tx.TxIn {
				w.utxo[in.PreviousOutPoint] = undo[i-1][j]
			}
		}
	}
}

// pushConnected makes hash the tip and forgets the block data of blocks
// deeper than ReorgDepth.
func (w *Writer) pushConnected(hash chainhash.Hash) {
	w.tip = hash
	w.connected = append(w.connected, hash)
	if len(w.connected) > w.opts.ReorgDepth {
		old := w.connected[0]
		w.connected = w.connected[1:]
		if st := w.blocks[old]; st != nil {
			st.block, st.undo = nil, nil
		}
	}
}

// reorgTo makes target the tip of the UTXO set: disconnects down to the
// fork with target's branch and reconnects that branch's blocks (whose
// undo data was written when they were first connected).
func (w *Writer) reorgTo(target chainhash.Hash) error {
	if w.tip == target {
		return nil
	}
	// The branch from target down to the active chain.
	active := make(map[chainhash.Hash]bool, len(w.connected))
	for _, h := range w.connected {
		active[h] = true
	}
	var branch []chainhash.Hash
	fork := target
	for !active[fork] {
		st := w.blocks[fork]
		if st == nil || st.block == nil {
			return fmt.Errorf("fork below %s is deeper than %d blocks", target, w.opts.ReorgDepth)
		}
		branch = append(branch, fork)
		fork = st.parent
	}
	for w.tip != fork {
		st := w.blocks[w.tip]
		if st.block == nil {
			return fmt.Errorf("reorg deeper than %d blocks", w.opts.ReorgDepth)
		}
		w.disconnect(st.block, st.undo)
		w.connected = w.connected[:len(w.connected)-1]
		w.tip = st.parent
	}
	for i := len(branch) - 1; i >= 0; i-- {
		st := w.blocks[branch[i]]
		if _, err := w.connect(st.block, st.height); err != nil {
			return err
		}
		w.pushConnected(branch[i])
	}
	return nil
}
