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
// its bytes differ from what the bucket holds.
func (p *Publisher) writeMutable(ctx context.Context) error {
	last := p.published[len(p.published)-1]
	var imps [2]rangefile.Object
	err := p.src.Read(func(r rangefile.Reader) error {
		h, err := r.HashAt(last.End)
		if err != nil {
			return fmt.Errorf("hash at %d: %w", last.End, err)
		}
		if h.String() != last.EndBlockHash {
			return fmt.Errorf("%w: range %d ends at block %s, the store now has %s", ErrConflict, last.Start, last.EndBlockHash, h)
		}
		for i := range imps {
			if imps[i], err = rangefile.BuildImport(r, p.cfg.Network.Net, i == 1, last.End); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	m := rangefile.NewManifest(p.cfg.Network, p.published, imps[0], imps[1])
	mb := m.Encode()
	lb := rangefile.LatestOf(&m, mb).Encode()
	for _, o := range []rangefile.Object{imps[0], imps[1], object(rangefile.ManifestName, mb), object(rangefile.LatestName, lb)} {
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

func object(name string, data []byte) rangefile.Object {
	return rangefile.Object{Name: name, Data: data, SHA256: sha256.Sum256(data)}
}

func hexOf(h [32]byte) string { return hex.EncodeToString(h[:]) }
