package httpapi

import (
	"context"
	"time"
)

// WarmCatalog keeps the catalog of /manifest.json and /latest warm until
// ctx ends: at once, then every Config.CatalogWarmPoll (or sooner when a
// request finds it behind), it hashes the
// final ranges and import files not yet cataloged (rangefile.Catalog.Warm,
// paced by Config.CatalogWarmPace, at most half a core), so that no
// request has to hash a long chain. While more than a few ranges are
// left, /manifest.json and /latest answer 503 with Retry-After. It
// persists nothing: a restart hashes again. It returns nil when ctx ends,
// or at once when the manifest is off (no Config.NetName).
func (s *Server) WarmCatalog(ctx context.Context) error {
	if s.cfg.NetName == "" {
		return nil
	}
	s.catalog.SetWarmer(true)
	defer s.catalog.SetWarmer(false)
	wait := time.Duration(0)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-s.warmKick:
			t.Stop()
		}
		wait = s.cfg.CatalogWarmPoll
		tip, have := s.view.Tip()
		if !have {
			continue
		}
		began, before := time.Now(), s.catalog.Stats()
		err := s.catalog.Warm(ctx, s.rangeRead, s.tweakIndex(), tip.Height, s.cfg.ReorgSafetyDepth, s.cfg.CatalogWarmPace)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// The chain moved under a read (a reorg near the tip): the
			// next poll goes on from what is cataloged.
			s.log.Warn().Err(err).Msg("warming the manifest's catalog")
			continue
		}
		if after := s.catalog.Stats(); after.RangesHashed > before.RangesHashed+1 {
			s.log.Info().Uint64("ranges", after.RangesHashed-before.RangesHashed).Dur("took", time.Since(began)).
				Msg("the manifest's catalog is warm")
		}
	}
}
