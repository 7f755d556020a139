// Command regtest runs cfindexd's demo (scripts/regtest/demo): a regtest
// node, cfindexd in front of it and a neutrino light client synced from
// cfindexd alone.
//
//	go run ./scripts/regtest         # run the demo start to finish (Ctrl-C cleans up too)
//	go run ./scripts/regtest -keep   # leave node, cfindexd and neutrino running until Ctrl-C or stop
//	go run ./scripts/regtest stop    # stop whatever a previous run left behind
//
// This package is only the launcher. It imports nothing but the standard
// library, so that `go run` starts it within seconds even on a cold build
// cache; it then says what it builds, builds the demo with the go command
// (the demo's packages: btcd's, neutrino's, cfindexd's), runs it with the
// same arguments, passes on Ctrl-C and SIGTERM, and exits with its status.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// demoPackage is the demo the launcher builds and runs.
	demoPackage = "github.com/cfindexd/cfindexd/scripts/regtest/demo"
	// buildNoticeAfter is how long a build may take before the launcher
	// says what it is building (a warm build cache finishes sooner).
	buildNoticeAfter = time.Second
	// buildProgressEvery is how often a long build is said to go on.
	buildProgressEvery = 30 * time.Second
)

func main() {
	os.Exit(launch(os.Args[1:], os.Stdout, os.Stderr))
}

// launch builds the demo into a temporary directory, runs it with args and
// returns its exit status.
func launch(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	dir, err := os.MkdirTemp("", "cfindexd-regtest-launcher-")
	if err != nil {
		stop()
		fmt.Fprintf(stderr, "regtest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "regtest-demo")
	err = buildDemo(ctx, bin, stdout)
	stop()
	if err != nil {
		fmt.Fprintf(stderr, "regtest: %v\n", err)
		return 1
	}
	return runDemo(bin, args, stdout, stderr)
}

// buildDemo builds the demo into bin. When the build takes longer than
// buildNoticeAfter (a cold build cache), it says what it builds, and every
// buildProgressEvery that it still does.
func buildDemo(ctx context.Context, bin string, out io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, demoPackage)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build %s: %w", demoPackage, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	began := time.Now()
	notice := time.NewTimer(buildNoticeAfter)
	defer notice.Stop()
	var progress <-chan time.Time
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while building the demo")
			}
			if err != nil {
				return fmt.Errorf("go build %s: %w: %s", demoPackage, err, strings.TrimSpace(output.String()))
			}
			return nil
		case <-notice.C:
			fmt.Fprintf(out, "building the demo (%s) with the go command: the first run compiles btcd's, neutrino's and cfindexd's packages from the module cache, later runs reuse Go's build cache\n", demoPackage)
			t := time.NewTicker(buildProgressEvery)
			defer t.Stop()
			progress = t.C
		case <-progress:
			fmt.Fprintf(out, "  still building (%s)\n", time.Since(began).Round(time.Second))
		}
	}
}

// runDemo runs bin with args on the launcher's terminal, passes on the
// signals that stop it, and returns its exit status.
func runDemo(bin string, args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "regtest: start the demo: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			// Ctrl-C reaches the demo from the terminal too; a second
			// interrupt is harmless to it.
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() > 0:
				return exit.ExitCode()
			default:
				fmt.Fprintf(stderr, "regtest: the demo: %v\n", err)
				return 1
			}
		}
	}
}
