package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// methodReport is what one method found and cost.
type methodReport struct {
	Method string   `json:"method"` // "bip158" or "bip37"
	Peers  []string `json:"peers"`
	// Matches are the wallet's receives and spends, in chain order.
	Matches []Match `json:"matches"`
	// BytesDownloaded counts every byte read from the peers during the
	// method (headers excluded: both methods need them).
	BytesDownloaded int64 `json:"bytes_downloaded"`
	BytesUploaded   int64 `json:"bytes_uploaded"`
	// BlocksFetched: BIP-158, full blocks downloaded because their filter
	// matched; BIP-37, filtered blocks (merkleblocks) received.
	BlocksFetched int `json:"blocks_fetched"`
	// FalsePositiveBlocks: blocks fetched (BIP-158) or delivered with
	// matched transactions (BIP-37) that hold nothing of the wallet's.
	FalsePositiveBlocks int `json:"false_positive_blocks"`
	// Revealed says what the peer learned about the wallet.
	Revealed string  `json:"revealed"`
	Seconds  float64 `json:"seconds"`

	// BIP-158.
	FiltersDownloaded int `json:"filters_downloaded,omitempty"`
	// CheckpointsVerified are getcfcheckpt headers the filter-header chain
	// was checked against; CrossChecked are filter headers compared with a
	// second peer's.
	CheckpointsVerified int `json:"checkpoints_verified,omitempty"`
	CrossChecked        int `json:"filter_headers_cross_checked,omitempty"`

	// BIP-37.
	FiltersLoaded int `json:"filters_loaded,omitempty"`
	// Elements and NoiseElements are summed over every filter loaded;
	// NoiseShare is noise / all inserted.
	Elements         int     `json:"elements_inserted,omitempty"`
	NoiseElements    int     `json:"noise_elements,omitempty"`
	NoiseShare       float64 `json:"noise_share,omitempty"`
	MaxExpectedFPR   float64 `json:"max_expected_fpr,omitempty"`
	BlocksWithTxs    int     `json:"blocks_with_matched_txs,omitempty"`
	MatchedTxs       int     `json:"matched_txs,omitempty"`
	FalsePositiveTxs int     `json:"false_positive_txs,omitempty"`
	RotationInterval uint32  `json:"rotation_interval,omitempty"`
}

// scanReport is cfscan's whole output.
type scanReport struct {
	Chain        string          `json:"chain"`
	Start        uint32          `json:"start"`
	End          uint32          `json:"end"`
	Tip          uint32          `json:"tip"`
	Watched      []watchedJSON   `json:"watched"`
	HeadersPeer  string          `json:"headers_peer"`
	HeadersBytes int64           `json:"headers_bytes"`
	Methods      []*methodReport `json:"methods"`
	// Transports maps each peer to the transport it was scanned over:
	// "v2" (BIP-324, encrypted) or "v1" (plaintext).
	Transports map[string]string `json:"transports"`
	// Agree is set when both methods ran: whether they found the same
	// matches.
	Agree *bool `json:"agree,omitempty"`
}

type watchedJSON struct {
	Address string `json:"address,omitempty"`
	Script  string `json:"script"`
}

// sortMatches orders matches by height, txid, kind and index, the order
// both methods are compared in.
func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Height, b.Height), cmp.Compare(a.Txid, b.Txid),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Index, b.Index))
	})
}

func writeJSON(w io.Writer, r *scanReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the report for a person.
func writeTable(w io.Writer, r *scanReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cfscan %s: blocks %d–%d (peer tip %d), %d watched script(s)\n", r.Chain, r.Start, r.End, r.Tip, len(r.Watched))
	fmt.Fprintf(&b, "headers: %d from %s (%s bytes)\n", r.Tip+1, r.peer(r.HeadersPeer), thousands(r.HeadersBytes))
	for _, m := range r.Methods {
		b.WriteString("\n")
		switch m.Method {
		case "bip158":
			fmt.Fprintf(&b, "BIP-158 compact block filters via %s\n", strings.Join(r.peers(m.Peers), " and "))
		case "bip37":
			fmt.Fprintf(&b, "BIP-37 Bloom filter via %s\n", strings.Join(r.peers(m.Peers), ", "))
		}
		if len(m.Matches) == 0 {
			b.WriteString("  no transactions found\n")
		} else {
			tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  txid\theight\tkind\tindex\tamount (sat)\taddress")
			for _, x := range m.Matches {
				fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%s\t%s\n", x.Txid, x.Height, x.Kind, x.Index, thousands(x.Amount), x.Address)
			}
			_ = tw.Flush()
		}
		fmt.Fprintf(&b, "  downloaded %s bytes (sent %s) in %.2f s\n", thousands(m.BytesDownloaded), thousands(m.BytesUploaded), m.Seconds)
		switch m.Method {
		case "bip158":
			fmt.Fprintf(&b, "  %d filters checked against %d checkpoint(s)", m.FiltersDownloaded, m.CheckpointsVerified)
			if m.CrossChecked > 0 {
				fmt.Fprintf(&b, " and %d filter headers of the second peer", m.CrossChecked)
			}
			fmt.Fprintf(&b, "; %d block(s) fetched, %d false positive(s)\n", m.BlocksFetched, m.FalsePositiveBlocks)
		case "bip37":
			fmt.Fprintf(&b, "  %d filtered blocks, %d with transactions (%d matched, %d false positive(s); %d false-positive block(s))\n",
				m.BlocksFetched, m.BlocksWithTxs, m.MatchedTxs, m.FalsePositiveTxs, m.FalsePositiveBlocks)
			fmt.Fprintf(&b, "  %d filter(s) loaded (new tweak and noise every %d blocks); %d of %d inserted elements were noise (%.0f %%); expected FPR ≤ %.6f\n",
				m.FiltersLoaded, m.RotationInterval, m.NoiseElements, m.Elements+m.NoiseElements, 100*m.NoiseShare, m.MaxExpectedFPR)
		}
		fmt.Fprintf(&b, "  the peer learned: %s\n", m.Revealed)
	}
	if r.Agree != nil {
		if *r.Agree {
			fmt.Fprintf(&b, "\nBoth methods found the same %d match(es).\n", len(r.Methods[0].Matches))
		} else {
			b.WriteString("\nThe methods DISAGREE.\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// peer names a peer and its transport: "127.0.0.1:18444 over v2".
func (r *scanReport) peer(addr string) string {
	if t, ok := r.Transports[addr]; ok {
		return addr + " over " + t
	}
	return addr
}

func (r *scanReport) peers(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = r.peer(a)
	}
	return out
}

// thousands formats n with thin groupings (1,234,567).
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
