// Command cfindexd follows a Bitcoin node over RPC/ZMQ, builds the BIP-158
// basic filter of every block, chains the BIP-157 filter headers in a bbolt
// store and serves them to light clients.
//
// main only wires components: configuration, logger, store, node client,
// follower; each long-running part is a value with Run(ctx), run in an
// errgroup that SIGTERM/SIGINT cancel.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
)

// version is cfindexd's release version.
const version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code. Errors end in
// one line on stderr.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, getenv, stdout)
	switch {
	case errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "cfindexd %s\n", version)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "cfindexd: config: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	applyMemoryLimit(cfg, getenv, log)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		// No delivery happens after Stop returns, so closing ends the
		// signal goroutine.
		signal.Stop(sigs)
		close(sigs)
	}()
	go func() {
		first := true
		for s := range sigs {
			if first {
				log.Info().Str("signal", s.String()).Msg("shutting down: finishing the current batch")
				cancel()
				first = false
				continue
			}
			log.Warn().Str("signal", s.String()).Msg("already shutting down")
		}
	}()

	if err := runDaemon(ctx, cfg, log); err != nil {
		fmt.Fprintf(stderr, "cfindexd: %v\n", err)
		return 1
	}
	log.Info().Msg("stopped")
	return 0
}

// newLogger builds the process logger: console on a terminal, JSON
// otherwise, unless logformat says which.
func newLogger(cfg Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "console"
		}
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// isTerminal reports whether f is a character device (a TTY).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
