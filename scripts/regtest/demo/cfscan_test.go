package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cfscanReport is the part of cfscan's JSON report the test reads.
type cfscanReport struct {
	Methods []struct {
		Method  string `json:"method"`
		Matches []struct {
			Txid   string `json:"txid"`
			Height uint32 `json:"height"`
			Kind   string `json:"kind"`
			Amount int64  `json:"amount_sat"`
		} `json:"matches"`
		BytesDownloaded int64   `json:"bytes_downloaded"`
		BlocksFetched   int     `json:"blocks_fetched"`
		Elements        int     `json:"elements_inserted"`
		NoiseElements   int     `json:"noise_elements"`
		NoiseShare      float64 `json:"noise_share"`
	} `json:"methods"`
	Agree *bool `json:"agree"`
}

// TestCfscanFindsTheDemoPaymentBothWays runs the demo (kept running) and
// then cfscan against its cfindexd alone, the way the README shows: both
// methods — BIP-158 filters matched locally, and a BIP-37 Bloom filter
// (with noise) served by cfindexd — find the demo payment and nothing
// else, agree, and the report gives each method's bytes and the BIP-37
// noise.
func TestCfscanFindsTheDemoPaymentBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "cfscan")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cfindexd/cfindexd/cmd/cfscan").CombinedOutput(); err != nil {
		t.Fatalf("build cfscan: %v\n%s", err, out)
	}

	demoCtx, stopDemo := context.WithCancel(ctx)
	defer stopDemo()
	state := filepath.Join(t.TempDir(), "state")
	var out syncBuffer
	rep, done := startKeptDemo(demoCtx, t, state, 20, &out, nil)
	defer func() {
		stopDemo()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("the demo did not stop")
		}
	}()

	args := []string{"--chain=regtest", "--peer=" + rep.P2PAddr, "--address=" + rep.Payment.Address.String(),
		"--start=" + strconv.Itoa(maturityBlocks), "--method=both", "--seed=" + strings.Repeat("5c", 32)}
	run := func(extra ...string) []byte {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("cfscan %v: %v\n%s%s", extra, err, stdout.String(), stderr.String())
		}
		return stdout.Bytes()
	}
	var got cfscanReport
	if err := json.Unmarshal(run("--json"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Agree == nil || !*got.Agree || len(got.Methods) != 2 {
		t.Fatalf("methods %d, agree %v", len(got.Methods), got.Agree)
	}
	for _, m := range got.Methods {
		if len(m.Matches) != 1 || m.Matches[0].Txid != rep.Payment.TxID.String() || m.Matches[0].Height != uint32(rep.Payment.Height) ||
			m.Matches[0].Kind != "receive" || m.Matches[0].Amount != rep.Payment.Value {
			t.Errorf("%s found %+v, want the demo payment %s at %d", m.Method, m.Matches, rep.Payment.TxID, rep.Payment.Height)
		}
		if m.BytesDownloaded <= 0 || m.BlocksFetched <= 0 {
			t.Errorf("%s: %d bytes, %d blocks", m.Method, m.BytesDownloaded, m.BlocksFetched)
		}
		if m.Method == "bip37" && (m.NoiseElements == 0 || m.NoiseShare <= 0) {
			t.Errorf("BIP-37 filter without noise: %d of %d elements", m.NoiseElements, m.Elements)
		}
	}
	table := string(run())
	t.Log("cfscan against the demo:\n" + table)
	for _, want := range []string{"BIP-158 compact block filters via " + rep.P2PAddr, "BIP-37 Bloom filter via " + rep.P2PAddr,
		"downloaded", "inserted elements were noise", rep.Payment.TxID.String(), "Both methods found the same 1 match(es)."} {
		if !strings.Contains(table, want) {
			t.Errorf("cfscan's report lacks %q", want)
		}
	}
}
