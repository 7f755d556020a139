package rest

import (
	"encoding/json"
	"net/http"
)

// readiness is the JSON body of /readyz.
type readiness struct {
	Ready         bool   `json:"ready"`
	Reason        string `json:"reason,omitempty"`
	IndexedHeight *int64 `json:"indexed_height,omitempty"`
	NodeHeight    *int64 `json:"node_height,omitempty"`
}

// serveHealthz answers while the process can serve HTTP at all.
func serveHealthz(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("ok\n"))
}

// serveReadyz answers 200 while the indexed tip is within ReadyMaxLag
// blocks of the node's last seen tip, 503 with the reason otherwise.
func (s *Server) serveReadyz(w http.ResponseWriter) {
	var rd readiness
	node, seen := s.metrics.NodeHeight()
	if seen {
		rd.NodeHeight = &node
	}
	tip, indexed := s.view.Tip()
	if indexed {
		h := int64(tip.Height)
		rd.IndexedHeight = &h
	}
	switch {
	case !seen:
		rd.Reason = "node tip not seen yet"
	case !indexed:
		rd.Reason = "nothing indexed yet"
	case node-int64(tip.Height) > int64(s.cfg.ReadyMaxLag):
		rd.Reason = "indexed tip is more than " + itoa(int64(s.cfg.ReadyMaxLag)) + " blocks behind the node"
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
