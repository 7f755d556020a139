package main

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// watchItem is one watched output script.
type watchItem struct {
	Script  []byte
	Address string // "" for a raw script without an address form
}

// watchlist is the wallet: its scripts, and the outputs found paying them
// (so that spends of those outputs are found too).
type watchlist struct {
	params   *chaincfg.Params
	items    []watchItem
	byScript map[string]int
	// owned are outputs found paying a watched script, by outpoint.
	owned map[wire.OutPoint]ownedOutput
}

type ownedOutput struct {
	value   int64
	address string
}

// parseWatchlist resolves addresses and hex scripts for params.
func parseWatchlist(params *chaincfg.Params, addrs, scripts []string) (*watchlist, error) {
	w := &watchlist{params: params, byScript: map[string]int{}, owned: map[wire.OutPoint]ownedOutput{}}
	for _, a := range splitList(addrs) {
		addr, err := address.DecodeAddress(a, params)
		if err != nil {
			return nil, fmt.Errorf("address %q is not a valid %s address: %w", a, params.Name, err)
		}
		if !addr.IsForNet(params) {
			return nil, fmt.Errorf("address %q is not a valid %s address: it is for another network", a, params.Name)
		}
		script, err := txscript.PayToAddrScript(addr)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", a, err)
		}
		w.add(script, addr.EncodeAddress())
	}
	for _, s := range splitList(scripts) {
		script, err := hex.DecodeString(s)
		if err != nil || len(script) == 0 {
			return nil, fmt.Errorf("script %q: not a non-empty hex string", s)
		}
		w.add(script, scriptAddress(script, params))
	}
	if len(w.items) == 0 {
		return nil, fmt.Errorf("nothing to watch: give --address or --script")
	}
	return w, nil
}

func (w *watchlist) add(script []byte, addr string) {
	if _, ok := w.byScript[string(script)]; ok {
		return
	}
	w.byScript[string(script)] = len(w.items)
	w.items = append(w.items, watchItem{Script: script, Address: addr})
}

// scriptAddress is the address of a standard script, or "".
func scriptAddress(script []byte, params *chaincfg.Params) string {
	_, addrs, _, err := txscript.ExtractPkScriptAddrs(script, params)
	if err != nil || len(addrs) != 1 {
		return ""
	}
	return addrs[0].EncodeAddress()
}

// splitList flattens repeated and comma-separated flag values.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// scripts are the watched output scripts (BIP-158 filter queries: a
// filter holds the output scripts a block creates and spends).
func (w *watchlist) scripts() [][]byte {
	out := make([][]byte, len(w.items))
	for i, it := range w.items {
		out[i] = it.Script
	}
	return out
}

// bloomElements are what a BIP-37 filter must hold to match the wallet:
// every non-empty data push of every watched script (a peer matches
// output-script pushes, never whole scripts), and the outpoints found so
// far that may be spent later.
func (w *watchlist) bloomElements() [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	for _, it := range w.items {
		pushes, err := txscript.PushedData(it.Script)
		if err != nil {
			continue
		}
		for _, p := range pushes {
			if len(p) > 0 && !seen[string(p)] {
				seen[string(p)] = true
				out = append(out, p)
			}
		}
	}
	for op := range w.owned {
		b := append(append([]byte(nil), op.Hash[:]...), byte(op.Index), byte(op.Index>>8), byte(op.Index>>16), byte(op.Index>>24))
		out = append(out, b)
	}
	return out
}

// Match is a transaction of the wallet: an output paying a watched script
// (receive) or an input spending one (spend).
type Match struct {
	Txid    string `json:"txid"`
	Height  uint32 `json:"height"`
	Kind    string `json:"kind"`  // "receive" or "spend"
	Index   uint32 `json:"index"` // output index (receive) or input index (spend)
	Amount  int64  `json:"amount_sat"`
	Address string `json:"address,omitempty"`
	// Spent is the outpoint a spend spends.
	Spent string `json:"spends,omitempty"`
}

// scanTx returns the wallet's matches in tx, recording new outputs (and
// forgetting spent ones) so later transactions' spends are found.
func (w *watchlist) scanTx(tx *wire.MsgTx, height uint32) []Match {
	var out []Match
	txid := tx.TxHash()
	for i, in := range tx.TxIn {
		if o, ok := w.owned[in.PreviousOutPoint]; ok {
			out = append(out, Match{Txid: txid.String(), Height: height, Kind: "spend", Index: uint32(i),
				Amount: o.value, Address: o.address, Spent: in.PreviousOutPoint.String()})
			delete(w.owned, in.PreviousOutPoint)
		}
	}
	for i, o := range tx.TxOut {
		idx, ok := w.byScript[string(o.PkScript)]
		if !ok {
			continue
		}
		addr := w.items[idx].Address
		out = append(out, Match{Txid: txid.String(), Height: height, Kind: "receive", Index: uint32(i), Amount: o.Value, Address: addr})
		w.owned[wire.OutPoint{Hash: txid, Index: uint32(i)}] = ownedOutput{value: o.Value, address: addr}
	}
	return out
}

// clone returns the watchlist with no outputs found yet, for a method to
// scan on its own.
func (w *watchlist) clone() *watchlist {
	return &watchlist{params: w.params, items: w.items, byScript: w.byScript, owned: map[wire.OutPoint]ownedOutput{}}
}
