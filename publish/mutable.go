package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/objstore"
	"github.com/cfindexd/cfindexd/rangefile"
)

// load reads the bucket's manifest, if any, and checks it against the
// network and the store: every range it lists must end at the block and
// filter header the store has there. false (and no error) while the store
// has fewer than the listed ranges final (final is how many it has): the
// store is catching up.
func (p *Publisher) load(ctx context.Context, final int) (bool, error) {
	b, err := p.bucket.Get(ctx, rangefile.ManifestName, rangefile.MaxManifestSize)
	if errors.Is(err, objstore.ErrNotFound) {
		p.log.Info().Msg("the bucket has no manifest: publishing from height 0")
		return true, nil
	}
	if err != nil {
		return false, err
	}
	m, err := rangefile.ParseManifest(b)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrConflict, rangefile.ManifestName, err)
	}
	if m.Network != p.cfg.Network.Name || m.Genesis != p.cfg.Network.Genesis.String() {
		return false, fmt.Errorf("%w: %s is of network %s (genesis %s), not %s", ErrConflict, rangefile.ManifestName,
			m.Network, m.Genesis, p.cfg.Network.Name)
	}
	if len(m.Ranges) > final {
		p.log.Info().Int("listed", len(m.Ranges)).Int("final", final).
			Msg("the bucket lists more ranges than the store has final: waiting for the store to catch up")
		return false, nil
	}
	err = p.src.Read(func(r rangefile.Reader) error {
		for _, e := range m.Ranges {
			h, err := r.HashAt(e.End)
			if err != nil {
				return fmt.Errorf("hash at %d: %w", e.End, err)
			}
			fhs, err := r.FilterHeadersByHeight(e.End, e.End)
			if err != nil || len(fhs) != 1 {
				return fmt.Errorf("filter header at %d: %d of them: %w", e.End, len(fhs), err)
			}
			if h.String() != e.EndBlockHash || chainhash.Hash(fhs[0]).String() != e.EndFilterHeader {
				return fmt.Errorf("%w: %s: range %d ends at block %s filter header %s, the store has %s %s: a reorg deeper than the reorg safety depth",
					ErrConflict, rangefile.ManifestName, e.Start, e.EndBlockHash, e.EndFilterHeader, h, fhs[0])
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	p.published = m.Ranges
	p.obs.PublishedHeight(m.Ranges[len(m.Ranges)-1].End)
	p.log.Info().Int("ranges", len(m.Ranges)).Msg("the bucket's manifest matches the store")
	return true, nil
}

// writeMutable writes the import files of heights 0 to the newest
// published range's end, then manifest.json, then latest, each only if
// its bytes differ from what the bucket holds. The import files (about
// 105 MB together on mainnet) are never held: a first streaming pass
// hashes each, a second streams it to the bucket, and the second fails
// the upload unless its bytes hash as the first's did (both read the
// chain whose block at the range's end is the published one, so they
// read the same bytes however the tip moves between them).
func (p *Publisher) writeMutable(ctx context.Context) error {
	last := p.published[len(p.published)-1]
	endHash, err := chainhash.NewHashFromStr(last.EndBlockHash)
	if err != nil {
		return fmt.Errorf("range %d: end block hash %q: %w", last.Start, last.EndBlockHash, err)
	}
	read := rangefile.ReadFunc(p.src.Read)
	var imps [2]rangefile.Object
	for i := range imps {
		imps[i], err = rangefile.HashImport(read, p.cfg.Network.Net, i == 1, last.End, *endHash)
		if errors.Is(err, rangefile.ErrChainChanged) {
			return fmt.Errorf("%w: range %d ends at block %s, which the store no longer has there: %w", ErrConflict, last.Start, last.EndBlockHash, err)
		}
		if err != nil {
			return fmt.Errorf("hash %s: %w", imps[i].Name, err)
		}
	}
	for i := range imps {
		if p.written[imps[i].Name] == hexOf(imps[i].SHA256) {
			continue
		}
		if err := p.ensureStream(ctx, imps[i], rangefile.NewImportStream(read, p.cfg.Network.Net, i == 1, last.End, *endHash)); err != nil {
			return err
		}
		p.written[imps[i].Name] = hexOf(imps[i].SHA256)
	}
	m := rangefile.NewManifest(p.cfg.Network, p.published, imps[0], imps[1])
	mb := m.Encode()
	lb := rangefile.LatestOf(&m, mb).Encode()
	for _, o := range []rangefile.Object{object(rangefile.ManifestName, mb), object(rangefile.LatestName, lb)} {
		if p.written[o.Name] == hexOf(o.SHA256) {
			continue
		}
		if _, err := p.ensure(ctx, &o, false); err != nil {
			return err
		}
		p.written[o.Name] = hexOf(o.SHA256)
	}
	p.synced = true
	p.obs.PublishedHeight(last.End)
	p.log.Info().Uint32("end", last.End).Int("ranges", len(p.published)).Msg("manifest published")
	return nil
}

// ensureStream makes the bucket hold the import file o (without Data),
// whose bytes s streams: kept if in place with its hash, streamed
// otherwise, s checking they hash to o's SHA-256.
func (p *Publisher) ensureStream(ctx context.Context, o rangefile.Object, s *rangefile.ImportStream) error {
	info, ok, err := p.bucket.Stat(ctx, o.Name)
	if err != nil {
		return err
	}
	if ok && info.SHA256 == hexOf(o.SHA256) {
		p.obs.PublishKept()
		return nil
	}
	s.Verify(o.SHA256)
	err = p.bucket.PutStream(ctx, o.Name, s, s.Size(), o.SHA256, rangefile.MutableCacheControl, "application/octet-stream")
	if err != nil && !errors.Is(err, rangefile.ErrImportChanged) && errors.Is(err, rangefile.ErrChainChanged) {
		return fmt.Errorf("%w: %s: the published range's end block left the store between two reads: %w", ErrConflict, o.Name, err)
	}
	if err != nil {
		return err
	}
	p.obs.PublishUploaded(int(s.Size()))
	return nil
}

func object(name string, data []byte) rangefile.Object {
	return rangefile.Object{Name: name, Data: data, SHA256: sha256.Sum256(data)}
}

func hexOf(h [32]byte) string { return hex.EncodeToString(h[:]) }
