package httpapi

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// maxLoggedPath bounds the request path written to a panic's log line.
const maxLoggedPath = 200

// recoverPanic, deferred by serveHTTP, turns a panicking handler into a
// 500 "internal error" (or, if the response had begun, a cut connection),
// logs the panic at error level with its stack and counts it in
// cfindexd_http_handler_panics_total. The server and every other request go
// on. http.ErrAbortHandler, which handlers raise on purpose to cut a
// response (a bulk download that raced a reorg), passes through to
// net/http, which closes the connection without logging.
func (s *Server) recoverPanic(w *statusRecorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	path := r.URL.Path
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "..."
	}
	s.log.Error().Str("panic", fmt.Sprint(v)).Str("method", r.Method).Str("path", path).
		Str("client", r.RemoteAddr).Str("stack", string(debug.Stack())).Msg("http handler panicked")
	s.metrics.HTTPHandlerPanicked()
	s.metrics.Error(ErrorKind)
	if w.status != 0 {
		panic(http.ErrAbortHandler)
	}
	writeText(w, http.StatusInternalServerError, "internal error")
}
