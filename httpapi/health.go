package httpapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// readiness is the JSON body of /readyz.
type readiness struct {
	Ready         bool   `json:"ready"`
	Reason        string `json:"reason,omitempty"`
	IndexedHeight *int64 `json:"indexed_height,omitempty"`
	NodeHeight    *int64 `json:"node_height,omitempty"`
	// IndexedTipAge is the age of the indexed tip's block timestamp, in
	// seconds.
	IndexedTipAge *int64 `json:"indexed_tip_age_seconds,omitempty"`
}

// serveHealthz answers while the process can serve HTTP at all.
func serveHealthz(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("ok\n"))
}

// serveReadyz answers 200 while the node answers the follower, the indexed
// tip is within ReadyMaxLag blocks of the node's last seen tip and its
// block is at most ReadyMaxTipAge old (when set); 503 with the first
// reason that fails otherwise.
func (s *Server) serveReadyz(w http.ResponseWriter) {
	var rd readiness
	node, seen := s.metrics.NodeHeight()
	if seen {
		rd.NodeHeight = &node
	}
	tip, blockTime, indexed := s.indexedTip()
	var age time.Duration
	if indexed {
		h := int64(tip.Height)
		rd.IndexedHeight = &h
		// A block may be stamped ahead of this clock (regtest, simnet,
		// or up to two hours on any chain): it is new, not of negative age.
		age = max(0, s.now().Sub(blockTime))
		secs := int64(age / time.Second)
		rd.IndexedTipAge = &secs
	}
	reachErr, reported := s.metrics.NodeReachability()
	switch {
	case reported && reachErr != nil:
		rd.Reason = "node unreachable: " + reachErr.Error()
	case !seen:
		rd.Reason = "node tip not seen yet"
	case !indexed:
		rd.Reason = "nothing indexed yet"
	case node-int64(tip.Height) > int64(s.cfg.ReadyMaxLag):
		rd.Reason = "indexed tip is more than " + itoa(int64(s.cfg.ReadyMaxLag)) + " blocks behind the node"
	case s.cfg.ReadyMaxTipAge > 0 && age > s.cfg.ReadyMaxTipAge:
		rd.Reason = "indexed tip's block is " + age.Round(time.Second).String() + " old, more than " + s.cfg.ReadyMaxTipAge.String() +
			" (the node is not getting new blocks?)"
	default:
		rd.Ready = true
	}
	status := http.StatusOK
	if !rd.Ready {
		status = http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(rd)
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
