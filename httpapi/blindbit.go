package httpapi

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// BlindBit Oracle's v1 HTTP JSON under blindBitPrefix (info, block-height,
// tweaks/<h>, tweak-index/<h> with ?dustLimit=, filter/new-utxos/<h>), in
// BlindBit's shapes as docs/silent-payments.md ("Serving") specifies;
// utxos, filter/spent and spent-index need per-output data the index does
// not keep and are answered 404. Errors are {"error": text}.

// blindBitFilterType is the filter_type BlindBit gives its new-utxos filter.
const blindBitFilterType = 4

// blindBitInfo is the body of info.
type blindBitInfo struct {
	Network                        string `json:"network"`
	Height                         uint32 `json:"height"`
	TweaksOnly                     bool   `json:"tweaks_only"`
	TweaksFullBasic                bool   `json:"tweaks_full_basic"`
	TweaksFullWithDustFilter       bool   `json:"tweaks_full_with_dust_filter"`
	TweaksCutThroughWithDustFilter bool   `json:"tweaks_cut_through_with_dust_filter"`
}

// blindBitFilter is the body of filter/new-utxos.
type blindBitFilter struct {
	FilterType  int    `json:"filter_type"`
	BlockHeight uint32 `json:"block_height"`
	BlockHash   string `json:"block_hash"`
	Data        string `json:"data"`
}

// blindBitNetwork is BlindBit's name for the network of magic.
func blindBitNetwork(magic wire.BitcoinNet) string {
	switch magic {
	case wire.MainNet:
		return "main"
	case wire.TestNet3:
		return "testnet"
	case wire.TestNet4:
		return "testnet4"
	case wire.TestNet:
		return "regtest"
	case wire.SimNet:
		return "simnet"
	}
	return "signet"
}

// serveBlindBit answers a BlindBit request.
func (s *Server) serveBlindBit(w http.ResponseWriter, t target) {
	if t.sp.blindBitBad != "" {
		writeBlindBitError(w, http.StatusBadRequest, t.sp.blindBitBad)
		return
	}
	switch t.sp.blindBit {
	case "utxos", "filter/spent", "spent-index":
		writeBlindBitError(w, http.StatusNotFound, "not served: cfindexd keeps no per-output data; fetch the block")
		return
	}
	sp := s.cfg.SilentPayments
	var answer any
	refusal := ""
	err := s.view.Read(func(v ChainReader) error {
		_, top, _, have, err := s.spTop(v)
		if err != nil {
			return err
		}
		switch {
		case !have:
			refusal = "the silent-payment index holds no block yet"
		case t.sp.blindBit == "info":
			answer = blindBitInfo{Network: blindBitNetwork(s.cfg.Net), Height: top, TweaksFullBasic: true, TweaksFullWithDustFilter: true}
		case t.sp.blindBit == "block-height":
			answer = map[string]uint32{"block_height": top}
		case t.start > top || t.start < sp.SPState().Start:
			refusal = "block height " + strconv.FormatUint(uint64(t.start), 10) + " is not indexed"
		case t.sp.blindBit == "filter/new-utxos":
			answer, err = blindBitNewUTXOs(v, sp, t.start)
		default:
			answer, err = blindBitTweaks(v, sp, t.start, t.sp.dust)
		}
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound) || refusal != "":
		if refusal == "" {
			refusal = "block height " + strconv.FormatUint(uint64(t.start), 10) + " is not indexed"
		}
		writeBlindBitError(w, http.StatusNotFound, refusal)
		return
	case err != nil:
		s.internalError(w, "blindbit "+t.sp.blindBit, err)
		return
	}
	body, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.NearTipMaxAge/time.Second)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// blindBitTweaks is the tweaks array of the block at height.
func blindBitTweaks(v ChainReader, sp SPIndex, height uint32, dust uint64) ([]string, error) {
	blocks, err := sp.SPTweaks(height, height)
	if err != nil {
		return nil, err
	}
	if err := sameBlock(v, &blocks[0]); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(blocks[0].Tweaks))
	for _, tw := range blocks[0].Tweaks {
		if tw.MaxValue >= dust {
			out = append(out, hex.EncodeToString(tw.Point[:]))
		}
	}
	return out, nil
}

// blindBitNewUTXOs is the new-utxos filter answer of the block at height.
func blindBitNewUTXOs(v ChainReader, sp SPIndex, height uint32) (blindBitFilter, error) {
	blocks, err := sp.SPFilters(height, height)
	if err != nil {
		return blindBitFilter{}, err
	}
	if err := sameBlock(v, &blocks[0]); err != nil {
		return blindBitFilter{}, err
	}
	b := &blocks[0]
	return blindBitFilter{FilterType: blindBitFilterType, BlockHeight: height, BlockHash: b.BlockHash.String(), Data: hex.EncodeToString(b.Filter)}, nil
}

// sameBlock checks that b is of the active block at its height as v reads
// the chain.
func sameBlock(v ChainReader, b *SPBlock) error {
	hash, err := v.HashAt(b.Height)
	if err != nil {
		return err
	}
	if hash != b.BlockHash {
		return fmt.Errorf("silent-payment block at %d: %w", b.Height, ErrViewChanged)
	}
	return nil
}

// writeBlindBitError sends BlindBit's error shape.
func writeBlindBitError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Del("Cache-Control")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
