package daemonenv

import (
	"strings"
	"testing"
)

// cfindexd runs without the developer's CFINDEXD_* variables and with no
// configuration file; everything else passes.
func TestCleanStripsSettings(t *testing.T) {
	got := Clean([]string{"HOME=/h", "CFINDEXD_WORKERS=3", "CFINDEXD_CONFIG=/etc/x.toml", "GOFLAGS=-x", "CFINDEXD_TEST_LOG=1"})
	want := []string{"CFINDEXD_CONFIG=", "HOME=/h", "GOFLAGS=-x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("environment %q, want %q", got, want)
	}
}
