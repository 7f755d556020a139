package httpapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// DaemonStatus is the part of /status that only the daemon knows: what
// it is, what it follows and how its node answers. Config.Status supplies
// it at every request.
type DaemonStatus struct {
	Version   string
	Commit    string
	GoVersion string
	Started   time.Time
	Chain     string
	Node      NodeStatus
	// Peers is the number of P2P light clients past the handshake.
	Peers int
	// Transports are the P2P peers and bytes by transport (v1, v2).
	Transports []TransportStatus
	// StorePath is the store's file.
	StorePath string
}

// NodeStatus describes the node cfindexd follows.
type NodeStatus struct {
	// Address is host:port of its JSON-RPC server (the one that answered,
	// when cfindexd tries several).
	Address string `json:"address"`
	// Reachable: the node answered the daemon's last contact.
	Reachable bool `json:"reachable"`
	// Kind is "bitcoin-core", "btcd" or "unknown"; Version its version
	// string (Core's subversion, btcd's JSON-RPC API version); both empty
	// until the node first answered.
	Kind    string `json:"kind,omitempty"`
	Version string `json:"version,omitempty"`
	// PrevoutSource is the prevout mode in use, empty before detection.
	PrevoutSource string `json:"prevout_source,omitempty"`
	// Error is the last contact's failure, empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// TransportStatus is one P2P transport's peers and bytes so far: v1
// (plaintext) or v2 (BIP-324, encrypted).
type TransportStatus struct {
	Transport     string `json:"transport"`
	Peers         int    `json:"peers"`
	BytesReceived int64  `json:"bytes_received"`
	BytesSent     int64  `json:"bytes_sent"`
}

// StatusReport is the JSON body of GET /status.
type StatusReport struct {
	Version       string     `json:"version"`
	Commit        string     `json:"commit"`
	GoVersion     string     `json:"go_version"`
	Started       time.Time  `json:"started"`
	UptimeSeconds float64    `json:"uptime_seconds"`
	Chain         string     `json:"chain"`
	Node          NodeStatus `json:"node"`
	// IndexedHeight and IndexedHash are the store's tip; absent while
	// the store is empty.
	IndexedHeight *int64 `json:"indexed_height,omitempty"`
	IndexedHash   string `json:"indexed_hash,omitempty"`
	// NodeHeight is the node's tip as last seen; absent before.
	NodeHeight *int64 `json:"node_height,omitempty"`
	// ProgressPct is (indexed height + 1) / (node height + 1) in percent,
	// at most 100; absent while either is unknown.
	ProgressPct *float64 `json:"progress_pct,omitempty"`
	Peers       int      `json:"peers"`
	// Transports splits Peers (and the bytes exchanged) by transport;
	// absent without a P2P server.
	Transports     []TransportStatus `json:"transports,omitempty"`
	StorePath      string            `json:"store_path"`
	StoreSizeBytes int64             `json:"store_size_bytes"`
}

// StatusFunc returns the daemon's part of /status; it must be fast and
// safe for concurrent use.
type StatusFunc func() DaemonStatus

// status assembles the report from the daemon's part, the store and the
// metrics, at now.
func (s *Server) status(now time.Time) StatusReport {
	var d DaemonStatus
	if s.cfg.Status != nil {
		d = s.cfg.Status()
	}
	r := StatusReport{
		Version:        d.Version,
		Commit:         d.Commit,
		GoVersion:      d.GoVersion,
		Started:        d.Started,
		Chain:          d.Chain,
		Node:           d.Node,
		Peers:          d.Peers,
		Transports:     d.Transports,
		StorePath:      d.StorePath,
		StoreSizeBytes: s.view.SizeBytes(),
	}
	if !d.Started.IsZero() {
		r.UptimeSeconds = float64(now.Sub(d.Started).Milliseconds()) / 1000
	}
	tip, indexed := s.view.Tip()
	if indexed {
		h := int64(tip.Height)
		r.IndexedHeight, r.IndexedHash = &h, tip.Hash.String()
	}
	if node, seen := s.metrics.NodeHeight(); seen {
		r.NodeHeight = &node
		if indexed {
			pct := 100 * float64(int64(tip.Height)+1) / float64(node+1)
			pct = min(100, float64(int64(pct*10))/10)
			r.ProgressPct = &pct
		}
	}
	return r
}

// serveStatus answers GET /status with the StatusReport as JSON.
func (s *Server) serveStatus(w http.ResponseWriter) {
	body, err := json.Marshal(s.status(time.Now()))
	if err != nil {
		s.internalError(w, "status", err)
		return
	}
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}
