// Package daemon runs the real cfindexd binary for cmd/cfbench: it builds
// ./cmd/cfindexd of the module with the go command (Build), starts it
// against a btcdtest node with the environment daemonenv.Clean gives and
// JSON logging (Start), follows its log lines as they arrive (Proc.WaitFor,
// Lines, which splits the runtime's gctrace lines from the JSON ones), stops
// it with SIGTERM (Proc.Terminate) and measures a whole catch-up from an
// empty datadir to the node's tip (Measure: wall time from the log, CPU
// and RSS through procstat).
//
// It never changes how cfindexd works: it only chooses flags.
package daemon
