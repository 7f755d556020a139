package bip37

import "time"

// Refusal reasons of Metrics.BloomFilterRefused.
const (
	refusedTooNoisy   = "too_noisy"
	refusedTooPrecise = "too_precise"
	refusedUpdateRate = "update_rate"
)

// RefusalReasons lists the reasons Metrics.BloomFilterRefused reports: a
// filter matching nearly everything (Config.MaxFPR), one too precise for
// the privacy floor (Config.MinFPR), and filter updates over the allowed
// rate.
func RefusalReasons() []string {
	return []string{refusedTooNoisy, refusedTooPrecise, refusedUpdateRate}
}

// Metrics receives BIP-37 counters.
type Metrics interface {
	// BloomPeers reports the peers with a filter loaded.
	BloomPeers(n int)
	// BloomFilterRefused counts a filterload or filteradd refused by
	// policy (its peer disconnected without penalty), by reason (one of
	// RefusalReasons).
	BloomFilterRefused(reason string)
	// FilteredBlockServed counts a merkleblock sent and the transactions
	// that followed it.
	FilteredBlockServed(matchedTxs int)
	// MempoolTxsAnnounced counts transactions announced (inv) to BIP-37
	// peers, in answer to mempool or as they arrived.
	MempoolTxsAnnounced(n int)
	// BloomWork counts CPU time spent on BIP-37 work (decoding blocks,
	// hashing txids, matching).
	BloomWork(d time.Duration)
}

// nopMetrics discards everything.
type nopMetrics struct{}

func (nopMetrics) BloomPeers(int)            {}
func (nopMetrics) BloomFilterRefused(string) {}
func (nopMetrics) FilteredBlockServed(int)   {}
func (nopMetrics) MempoolTxsAnnounced(int)   {}
func (nopMetrics) BloomWork(time.Duration)   {}
