// Package daemonenv gives the environment a cfindexd child process runs
// with: the parent's, without its CFINDEXD_* variables and with
// CFINDEXD_CONFIG empty. A developer's settings (CFINDEXD_WORKERS, a
// configuration file) must not change what a benchmark measures or a test
// checks, and another package's test knobs would be refused as unknown
// keys. Programs (cmd/cfbench) and tests (internal/daemontest) share it;
// it imports nothing but the standard library and never testing.
package daemonenv

import "strings"

// Prefix starts every environment variable cfindexd reads.
const Prefix = "CFINDEXD_"

// Clean is environ without its CFINDEXD_* variables, with CFINDEXD_CONFIG
// empty so that no configuration file is read.
func Clean(environ []string) []string {
	env := []string{Prefix + "CONFIG="}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, Prefix) {
			env = append(env, kv)
		}
	}
	return env
}
