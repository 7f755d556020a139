package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi/corerest"
	"github.com/cfindexd/cfindexd/rangefile"
)

// Server is the HTTP server: Core-compatible REST filter endpoints, bulk
// bootstrap files, /metrics, /healthz, /readyz and /status. Create it with
// New and run it with Serve.
type Server struct {
	cfg       Config
	view      ChainView
	metrics   Metrics
	log       zerolog.Logger
	bulkSlots *bulkSlots
	catalog   *rangefile.Catalog // /manifest.json and /latest
	warmKick  chan struct{}      // wakes WarmCatalog: a request found it behind
	now       func() time.Time   // the clock of /readyz's tip age
}

// New checks cfg (zero fields take the defaults) and returns a server over
// view that reports to, and serves, metrics.
func New(cfg Config, view ChainView, metrics Metrics, log zerolog.Logger) (*Server, error) {
	if view == nil {
		return nil, fmt.Errorf("%w: nil chain view", ErrBadConfig)
	}
	if metrics == nil {
		return nil, fmt.Errorf("%w: nil metrics", ErrBadConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:       cfg,
		view:      view,
		metrics:   metrics,
		log:       log.With().Str("component", "http").Logger(),
		bulkSlots: newBulkSlots(cfg.MaxBulkInFlight, cfg.MaxBulkPerAddr, metrics.HTTPBulkInFlight),
		catalog:   rangefile.NewCatalog(rangefile.Network{Name: cfg.NetName, Net: cfg.Net, Genesis: cfg.Genesis}),
		now:       time.Now,
		warmKick:  make(chan struct{}, 1),
	}, nil
}

// Handler returns the server's http.Handler, for tests and for embedding.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve serves on ln (which it closes) until ctx ends, then shuts down
// gracefully: it stops accepting, lets requests in flight finish for up to
// Config.ShutdownTimeout (their contexts are not cancelled by ctx), then
// closes what is left. Connections are admitted within Config.MaxConns
// and MaxConnsPerAddr (see connGate).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	gate := newConnGate(ln, s.cfg, s.metrics)
	ln = gate
	unstarted := newUnstartedConns()
	srv := &http.Server{
		Handler: s.Handler(),
		// The gate follows every connection's state for its caps and
		// eviction; unstarted closes, at shutdown, those that never sent
		// a request (a *gatedConn, so closing it frees its place).
		ConnState: func(c net.Conn, state http.ConnState) {
			gate.connState(c, state)
			unstarted.track(c, state)
		},
		// awaitAnswerSent finds the connection of a request there, and
		// when the server shuts down (it stops waiting then).
		BaseContext:       func(net.Listener) context.Context { return withShutdown(context.Background(), ctx.Done()) },
		ConnContext:       withConn,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		// Within a request, minRateWriter moves the write deadline while
		// bytes move; this bounds what net/http writes on its own (an
		// error reply) to one window of the minimum rate too.
		WriteTimeout:   min(s.cfg.WriteTimeout, s.cfg.BulkMinRateWindow),
		IdleTimeout:    s.cfg.IdleTimeout,
		MaxHeaderBytes: s.cfg.MaxHeaderBytes,
		ErrorLog:       log.New(zerologWriter{s.log}, "", 0),
	}
	s.log.Info().Str("addr", ln.Addr().String()).Msg("http listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	// Connections that never sent a request are closed now; any the
	// listener still accepts before Shutdown closes it are closed as they
	// arrive (unstartedConns.track).
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	unstarted.closeAll()
	err := <-shut
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	s.log.Info().Msg("http stopped")
	return nil
}

// serveHTTP dispatches one request and counts it by route and status,
// with its duration. A panic in a handler is recovered (recoverPanic) and
// the request counted with the status it was answered.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	route, bulk := routeNotFound, false
	defer func() { s.metrics.HTTPRequest(route.String(), rec.code(), time.Since(began)) }()
	// Every answer is written under the minimum rate (minRateWriter), and
	// so is what net/http flushes after the handler returns.
	body := newMinRateWriter(rec, s.cfg.BulkMinRate, s.cfg.BulkMinRateWindow, began.Add(s.cfg.WriteTimeout), time.Now)
	defer func() {
		body.finish()
		// Bulk downloads log and count their own cuts.
		if errors.Is(body.failed, errTooSlow) && !bulk {
			s.metrics.HTTPSlowCut("answer")
			s.log.Debug().Str("client", r.RemoteAddr).Str("route", route.String()).Int("min_rate", s.cfg.BulkMinRate).
				Msg("answer cut off: the client reads slower than the minimum rate")
		}
	}()
	// A pipelined request waits for the answers before it to leave; a
	// client that reads none of them gets its connection closed, with no
	// answer built (awaitAnswerSent).
	if !awaitAnswerSent(r, began.Add(min(s.cfg.BulkMinRateWindow, s.cfg.WriteTimeout))) {
		rec.status = http.StatusRequestTimeout // for the metrics: never answered
		s.metrics.HTTPSlowCut("answer")
		s.log.Debug().Str("client", r.RemoteAddr).Msg("connection closed: the client pipelines requests and reads no answer")
		panic(http.ErrAbortHandler)
	}
	defer s.recoverPanic(rec, r)
	if len(r.RequestURI) > s.cfg.MaxURILength {
		writeText(body, http.StatusRequestURITooLong, "request target too long")
		return
	}
	t := parseTarget(r.URL.EscapedPath(), r.URL.RawQuery)
	route = t.route
	if !methodAllowed(t.route, r.Method) {
		body.Header().Set("Allow", allowed(t.route))
		writeText(body, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	switch t.route {
	case routeBlockFilter, routeBlockFilterHeaders, routeHeaders, routeBlockHashByHeight, routeRESTUnknown:
		corerest.Serve(body, t.rest, restChain{s.view}, s.internalError)
	case routeBulkIndex:
		s.serveBulkIndex(body)
	case routeBulkHeaders, routeBulkFilterHeaders, routeBulkFilters, routeNeutrinoBlockHeaders, routeNeutrinoFilterHeaders,
		routeRangeHeaders, routeRangeFilterHeaders, routeRangeFilters, routeRangeImport:
		// Public chain data: let browser wallets fetch it cross-origin.
		body.Header().Set("Access-Control-Allow-Origin", "*")
		bulk = true
		s.serveBulkRoute(body, r, began, func() { s.serveBulkFile(body, r, t) })
	case routeSPTweaks, routeSPFiles, routeSPCheckpoints, routeBlindBit:
		body.Header().Set("Access-Control-Allow-Origin", "*")
		bulk = true
		s.serveSPRoute(body, r, t, began)
	case routeManifest, routeLatest:
		body.Header().Set("Access-Control-Allow-Origin", "*")
		bulk = true
		s.serveBulkRoute(body, r, began, func() { s.serveLayoutDocument(body, t) })
	case routeBulkBad:
		writeText(body, http.StatusBadRequest, t.badReason)
	case routeMetrics:
		s.serveMetrics(body, r)
	case routeHealthz:
		serveHealthz(body)
	case routeReadyz:
		s.serveReadyz(body)
	case routeStatus:
		s.serveStatus(body)
	default:
		writeText(body, http.StatusNotFound, "not found")
	}
}

// serveBulkRoute takes a bulk slot (or answers 503) and runs serve, a bulk
// or silent-payment answer, under BulkWriteTimeout instead of WriteTimeout. If a newcomer takes the
// slot over (bulkSlots), the download is cut off.
func (s *Server) serveBulkRoute(w *minRateWriter, r *http.Request, began time.Time, serve func()) {
	release, refused := s.bulkSlots.acquire(clientKeyOf(r.RemoteAddr), func() {
		s.log.Debug().Str("client", r.RemoteAddr).Msg("bulk download cut off: its slot was taken over by a client of a network or address holding fewer slots")
		w.cut()
	})
	if release == nil {
		s.metrics.HTTPBulkRefused(refused)
		w.Header().Set("Retry-After", "5")
		if refused == "per_address" {
			writeText(w, http.StatusServiceUnavailable, "too many bulk downloads from your address in flight; retry")
		} else {
			writeText(w, http.StatusServiceUnavailable, "too many bulk downloads in flight; retry")
		}
		return
	}
	defer release()
	w.hardDeadline = began.Add(s.cfg.BulkWriteTimeout)
	serve()
}

// serveMetrics refreshes the gauges read from the store, then serves the
// registry.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.metrics.SetStoreSize(s.view.SizeBytes())
	if tip, blockTime, ok := s.indexedTip(); ok {
		s.metrics.SetIndexedTip(tip.Height, blockTime)
	}
	s.metrics.Handler().ServeHTTP(w, r)
}

// indexedTip returns the indexed tip and its block timestamp, read from one
// snapshot; false on an empty index or a failed read.
func (s *Server) indexedTip() (tip Tip, blockTime time.Time, ok bool) {
	err := s.view.Read(func(v ChainReader) error {
		if tip, ok = v.Tip(); !ok {
			return nil
		}
		hdr, err := v.HeaderAt(tip.Height)
		blockTime = hdr.Timestamp
		return err
	})
	if err != nil {
		s.log.Error().Err(err).Msg("read the indexed tip")
		return Tip{}, time.Time{}, false
	}
	return tip, blockTime, ok
}

// internalError logs err and answers 500 without details.
func (s *Server) internalError(w http.ResponseWriter, what string, err error) {
	s.log.Error().Err(err).Str("request", what).Msg("http request failed")
	s.metrics.Error(ErrorKind)
	writeText(w, http.StatusInternalServerError, "internal error")
}

// methodAllowed: Core's REST answers GET, HEAD and POST alike (a recorded
// POST got the block); everything else is read-only.
func methodAllowed(r route, m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return r.isREST()
	}
	return false
}

func allowed(r route) string {
	if r.isREST() {
		return "GET, HEAD, POST"
	}
	return "GET, HEAD"
}

// statusRecorder remembers the status code for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// zerologWriter routes net/http's own log lines to zerolog: at debug level
// (malformed requests, accept errors, TLS noise: caused by clients), except
// a panic net/http caught itself, which is a bug of ours and logged at
// error. Handler panics never get there (recoverPanic catches them first).
type zerologWriter struct{ log zerolog.Logger }

func (z zerologWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	if strings.HasPrefix(msg, "http: panic serving") {
		z.log.Error().Msg(msg)
	} else {
		z.log.Debug().Msg(msg)
	}
	return len(p), nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
