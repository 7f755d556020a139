package prevouts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// ModeBlocksDir reads blocks and their undo data from Bitcoin Core's blocks
// directory (blk*.dat, rev*.dat, xor.dat), the node supplying only the
// chain's block hashes.
const ModeBlocksDir = "blocksdir"

// BlocksDirSource is the blocks-directory prevout source: each block and
// its spent scripts are read from Core's files (BlocksDir); a block whose
// records are not readable yet — not flushed, not connected, cut short, or
// with an ambiguous undo record — comes from the fallback source, the one
// DetectSource would have picked otherwise. Safe for concurrent use.
type BlocksDirSource struct {
	dir      *blockfiles.Dir
	fallback BlockSource // nil: no fallback, such blocks fail and are retried
	log      zerolog.Logger
	// runCap is where FetchBlocks stops reading a run (runCapBytes;
	// tests lower it).
	runCap int

	fromFiles, fromFallback atomic.Uint64
	toldFallback            atomic.Bool
}

var (
	_ BlockSource    = (*BlocksDirSource)(nil)
	_ RunBlockSource = (*BlocksDirSource)(nil)
)

// NewBlocksDirSource returns a source reading dir, asking fallback (which
// may be nil) for what dir cannot answer.
func NewBlocksDirSource(dir *blockfiles.Dir, fallback BlockSource, log zerolog.Logger) *BlocksDirSource {
	return &BlocksDirSource{dir: dir, fallback: fallback, log: log, runCap: runCapBytes}
}

// Mode implements BlockSource.
func (s *BlocksDirSource) Mode() string { return ModeBlocksDir }

// Fallback returns the source asked for blocks the files cannot answer,
// or nil.
func (s *BlocksDirSource) Fallback() BlockSource { return s.fallback }

// BlockCounts returns how many blocks were read from the files and how
// many came from the fallback source.
func (s *BlocksDirSource) BlockCounts() (fromFiles, fromFallback uint64) {
	return s.fromFiles.Load(), s.fromFallback.Load()
}

// readFromFiles reads one block and its spent scripts from the files.
func (s *BlocksDirSource) readFromFiles(ctx context.Context, hash chainhash.Hash) (*wirescan.ScannedBlock, [][]byte, error) {
	b, loc, err := s.dir.ReadBlock(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	prev, err := s.dir.ReadUndo(ctx, b, loc)
	if err != nil {
		return nil, nil, err
	}
	return b, prev, nil
}

// noteFallback logs why a block came from the fallback: the first time at
// info, then at debug.
func (s *BlocksDirSource) noteFallback(hash chainhash.Hash, why error) {
	ev := s.log.Debug()
	if s.toldFallback.CompareAndSwap(false, true) {
		ev = s.log.Info()
	}
	mode := "none"
	if s.fallback != nil {
		mode = s.fallback.Mode()
	}
	ev.Str("block", hash.String()).Str("fallback", mode).AnErr("reason", why).
		Msg("blocks dir: block not readable from the files yet; asking the fallback source (further ones at debug level)")
}

// FetchBlock implements BlockSource.
func (s *BlocksDirSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	b, prev, err := s.readFromFiles(ctx, hash)
	if err == nil {
		block, err := nodeclient.DecodeBlock(b.Raw, hash)
		if err != nil {
			return nil, nil, err
		}
		s.fromFiles.Add(1)
		return block, prev, nil
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if s.fallback == nil {
		return nil, nil, fmt.Errorf("fetch block %s: %w (and no fallback source)", hash, err)
	}
	s.noteFallback(hash, err)
	s.fromFallback.Add(1)
	return s.fallback.FetchBlock(ctx, hash)
}

// FetchBlocks implements RunBlockSource. The files need no turns: turn is
// ended at once. Reading stops once the blocks read hold 3 MiB (the
// first blocks of the run come back; the caller asks for the rest), so a
// run sized for small blocks that meets full ones holds a few megabytes,
// not sixteen full blocks. Blocks the files cannot answer are fetched from
// the fallback together, as one run when it takes runs.
func (s *BlocksDirSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *RunTurn) ([]FetchedBlock, error) {
	turn.Done()
	out := make([]FetchedBlock, len(hashes))
	var missing []int
	held := 0
	for i, h := range hashes {
		if held >= s.runCap {
			hashes, out = hashes[:i], out[:i]
			break
		}
		b, prev, err := s.readFromFiles(ctx, h)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if s.fallback == nil {
				return nil, fmt.Errorf("fetch block %s: %w (and no fallback source)", h, err)
			}
			s.noteFallback(h, err)
			missing = append(missing, i)
			continue
		}
		out[i] = FetchedBlock{Header: b.Header, Hash: b.Hash, OutputScripts: b.Outs, PrevScripts: prev, Raw: b.Raw}
		held += len(b.Raw)
	}
	s.fromFiles.Add(uint64(len(hashes) - len(missing)))
	if len(missing) == 0 {
		return out, nil
	}
	s.fromFallback.Add(uint64(len(missing)))
	if err := s.fetchFallback(ctx, hashes, missing, out); err != nil {
		return nil, err
	}
	return out, nil
}

// fetchFallback fills out[i] for every i in missing from the fallback. A
// fallback that takes runs may return the first blocks of one only (the
// txindex source bounds what a run holds): the rest is asked for next.
func (s *BlocksDirSource) fetchFallback(ctx context.Context, hashes []chainhash.Hash, missing []int, out []FetchedBlock) error {
	if runner, ok := s.fallback.(RunBlockSource); ok {
		want := make([]chainhash.Hash, len(missing))
		for j, i := range missing {
			want[j] = hashes[i]
		}
		for done := 0; done < len(want); {
			got, err := runner.FetchBlocks(ctx, want[done:], nil)
			if err != nil {
				return err
			}
			if len(got) == 0 || len(got) > len(want)-done {
				return fmt.Errorf("fallback source returned %d blocks for %d", len(got), len(want)-done)
			}
			for j, fb := range got {
				out[missing[done+j]] = fb
			}
			done += len(got)
		}
		return nil
	}
	for _, i := range missing {
		block, prev, err := s.fallback.FetchBlock(ctx, hashes[i])
		if err != nil {
			return err
		}
		fb, err := fetchedFromMsgBlock(block, prev, hashes[i])
		if err != nil {
			return err
		}
		out[i] = fb
	}
	return nil
}

// fetchedFromMsgBlock turns a decoded block into a FetchedBlock.
func fetchedFromMsgBlock(block *wire.MsgBlock, prev [][]byte, hash chainhash.Hash) (FetchedBlock, error) {
	var buf bytes.Buffer
	buf.Grow(block.SerializeSize())
	if err := block.Serialize(&buf); err != nil {
		return FetchedBlock{}, fmt.Errorf("block %s: %w", hash, err)
	}
	b, err := wirescan.ScanBlock(buf.Bytes(), hash)
	if err != nil {
		return FetchedBlock{}, fmt.Errorf("%w: %w", nodeclient.ErrMalformed, err)
	}
	return FetchedBlock{Header: b.Header, Hash: b.Hash, OutputScripts: b.Outs, PrevScripts: prev, Raw: b.Raw}, nil
}

// Close closes the block files kept open and the fallback source if it
// holds resources.
func (s *BlocksDirSource) Close() error {
	s.dir.Close()
	if c, ok := s.fallback.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// detectBlocksDir sets up the blocks-directory source: the directory must
// be readable, its first block must be the node's genesis (unless pruned
// away) and the node's tip must be in it. The fallback is what detection picks without it
// (none, with a warning, when the node offers nothing else). In auto mode
// (forced false) any reason not to use the directory is logged at info and
// (nil, nil) returned, and only Bitcoin Core's directory is considered.
func detectBlocksDir(ctx context.Context, c *nodeclient.Client, log zerolog.Logger, o SourceOptions, forced bool) (BlockSource, error) {
	skip := func(reason error) (BlockSource, error) {
		if forced {
			return nil, fmt.Errorf("%w: prevoutsource %s: %w", nodeclient.ErrNoPrevoutSource, ModeBlocksDir, reason)
		}
		log.Info().Str("blocksdir", o.BlocksDir).AnErr("reason", reason).Msg("not reading the node's blocks directory")
		return nil, nil
	}
	if o.BlocksDir == "" {
		return skip(errors.New("no blocks directory configured (blocksdir)"))
	}
	if !forced {
		info, err := c.GetNodeInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("detect node: %w", err)
		}
		if info.Kind != nodeclient.NodeCore {
			return skip(fmt.Errorf("the node is %s, not Bitcoin Core", info.Kind))
		}
	}
	dir, err := blockfiles.Open(o.BlocksDir, o.BlocksDirNet, log.With().Str("blocksdir", o.BlocksDir).Logger())
	if err != nil {
		return skip(err)
	}
	// A pruned node has deleted blk00000.dat; its tip, below, still
	// tells whether this is its directory.
	genesis, err := dir.FirstBlockHash()
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return skip(err)
	default:
		nodeGenesis, err := c.GetBlockHash(ctx, 0)
		if err != nil {
			return nil, err
		}
		if genesis != nodeGenesis {
			return skip(fmt.Errorf("blk00000.dat starts with block %s, the node's genesis is %s: not this node's directory", genesis, nodeGenesis))
		}
	}
	tip, err := c.GetBestBlockHash(ctx)
	if err != nil {
		return nil, err
	}
	if _, _, err := dir.ReadBlock(ctx, tip); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return skip(fmt.Errorf("the node's tip %s is not in the directory: %w", tip, err))
	}

	fo := o
	fo.BlocksDir, fo.Force = "", ""
	fallback, err := DetectSource(ctx, c, log, fo)
	switch {
	case errors.Is(err, nodeclient.ErrNoPrevoutSource):
		log.Warn().Err(err).Msg("blocks dir: no fallback source; blocks not yet readable from the files are retried until they are")
		fallback = nil
	case err != nil:
		return nil, err
	}
	mode := "none"
	if fallback != nil {
		mode = fallback.Mode()
	}
	log.Info().Str("mode", ModeBlocksDir).Str("blocksdir", o.BlocksDir).Bool("obfuscated", dir.Obfuscated()).
		Str("fallback", mode).Msg("prevout source: Bitcoin Core's blocks directory (blk/rev files)")
	return NewBlocksDirSource(dir, fallback, log.With().Str("component", "blocksdir").Logger()), nil
}
