package btcdtest

import (
	"bytes"
	"os"
	"testing"
)

// logTail prints the last lines of btcd's captured output to tb.
func (n *Node) logTail(tb testing.TB) {
	data, err := os.ReadFile(n.LogPath())
	if err != nil {
		tb.Logf("btcdtest: read btcd log: %v", err)
		return
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	tb.Logf("btcdtest: last %d lines of %s:\n%s", len(lines), n.LogPath(), bytes.Join(lines, []byte("\n")))
}
