package main

import (
	"fmt"
	"io"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// report is what the demo saw, printed at the end of a run.
type report struct {
	NodeKind string
	// NodeHeight and NodeHash are the node's tip.
	NodeHeight int32
	NodeHash   chainhash.Hash
	// IndexedHeight, IndexedHash and IndexedFilterHeader are cfindexd's
	// tip as its REST interface serves it.
	IndexedHeight       int32
	IndexedHash         chainhash.Hash
	IndexedFilterHeader chainhash.Hash
	// Light is neutrino's verified tip; LightPeers its peer count at the end.
	Light      lightTip
	LightPeers int32
	// Payment is the demo transaction; Matches what neutrino's rescan found.
	Payment     demoPayment
	Matches     []lightMatch
	RescanFrom  int32
	RescanBlock int32
	// Phases are the steps and how long each took.
	Phases []phase
	// Addresses and commands, for -keep.
	P2PAddr, HTTPAddr, NodeRPC, NodeP2P, StateDir string
	NeutrinoDir, MineCommand, DaemonBin           string
}

// phase is one timed step of the demo.
type phase struct {
	Name string
	Took time.Duration
}

// total is the time of all phases.
func (r *report) total() time.Duration {
	var t time.Duration
	for _, p := range r.Phases {
		t += p.Took
	}
	return t
}

// write prints the report for a person.
func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "\ncfindexd regtest demo (%s behind cfindexd, neutrino in front)\n", r.NodeKind)
	fmt.Fprintf(w, "  node tip            %6d  %s\n", r.NodeHeight, r.NodeHash)
	fmt.Fprintf(w, "  cfindexd tip        %6d  %s\n", r.IndexedHeight, r.IndexedHash)
	fmt.Fprintf(w, "  neutrino headers    %6d  %s\n", r.Light.Height, r.Light.Hash)
	fmt.Fprintf(w, "  filter header       %6d  %s (neutrino = cfindexd)\n", r.Light.Height, r.Light.FilterHeader)
	fmt.Fprintf(w, "  watched address     %s\n", r.Payment.Address)
	for _, m := range r.Matches {
		fmt.Fprintf(w, "  matched transaction %s in block %d (%s), %d sat\n", m.TxID, m.Height, r.Payment.BlockHash, r.Payment.Value)
	}
	fmt.Fprintf(w, "  rescan              blocks %d..%d, %d match\n", r.RescanFrom+1, r.RescanBlock, len(r.Matches))
	fmt.Fprintf(w, "  neutrino peers      %d (cfindexd only, not banned)\n", r.LightPeers)
	fmt.Fprintf(w, "  timing              %s in all\n", r.total().Round(time.Millisecond))
	for _, p := range r.Phases {
		fmt.Fprintf(w, "    %-40s %8s\n", p.Name, p.Took.Round(time.Millisecond))
	}
}

// writeAddresses prints where the kept processes listen and how to use
// them.
func (r *report) writeAddresses(w io.Writer) {
	fmt.Fprintf(w, "\nstill running (-keep):\n")
	fmt.Fprintf(w, "  node RPC            %s\n", r.NodeRPC)
	fmt.Fprintf(w, "  node P2P            %s\n", r.NodeP2P)
	fmt.Fprintf(w, "  cfindexd P2P        %s (chain regtest; neutrino.connect=%s)\n", r.P2PAddr, r.P2PAddr)
	fmt.Fprintf(w, "  cfindexd HTTP       http://%s/status  /metrics  /readyz  /rest/blockfilter/basic/<hash>.json\n", r.HTTPAddr)
	fmt.Fprintf(w, "  neutrino            in this process, peer %s, data %s\n", r.P2PAddr, r.NeutrinoDir)
	fmt.Fprintf(w, "  state, logs         %s\n", r.StateDir)
	fmt.Fprintf(w, "mine a block (cfindexd indexes it, neutrino follows):\n  %s\n", r.MineCommand)
	fmt.Fprintf(w, "ask cfindexd how it is doing:\n  %s status --chain=regtest --httplisten=%s\n", shellQuote(r.DaemonBin), r.HTTPAddr)
	fmt.Fprintf(w, "Ctrl-C here, or `%s` elsewhere, stops everything.\n", stopCommand(r.StateDir))
}
