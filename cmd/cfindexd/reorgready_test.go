package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestReorgReadyKeys: reorgsettle, allowdeepreorg and readymaxtipage load,
// readymaxtipage = "auto" depends on the chain, and bad values stop the
// daemon with one line.
func TestReorgReadyKeys(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		settle     time.Duration
		allow      bool
		maxTipAge  time.Duration
		indexerSet time.Duration
	}{
		{[]string{"--chain=main"}, 10 * time.Second, false, 2 * time.Hour, 10 * time.Second},
		{[]string{"--chain=signet"}, 10 * time.Second, false, 2 * time.Hour, 10 * time.Second},
		{[]string{"--chain=regtest"}, 10 * time.Second, false, 0, 10 * time.Second},
		{[]string{"--chain=simnet", "--readymaxtipage=30m"}, 10 * time.Second, false, 30 * time.Minute, 10 * time.Second},
		{[]string{"--chain=main", "--readymaxtipage=0", "--reorgsettle=0s", "--allowdeepreorg=true"}, 0, true, 0, -1},
		{[]string{"--chain=main", "--reorgsettle=2m"}, 2 * time.Minute, false, 2 * time.Hour, 2 * time.Minute},
	} {
		cfg, err := loadConfig(tc.args, envFrom(nil), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		age, err := readyMaxTipAge(cfg.ReadyMaxTipAge, cfg.Chain)
		if err != nil || cfg.ReorgSettle != tc.settle || cfg.AllowDeepReorg != tc.allow || age != tc.maxTipAge || reorgSettle(cfg.ReorgSettle) != tc.indexerSet {
			t.Errorf("%v: settle %v allow %v max tip age %v (%v), indexer settle %v", tc.args, cfg.ReorgSettle, cfg.AllowDeepReorg, age, err, reorgSettle(cfg.ReorgSettle))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reorgsettle=-1s"}, "reorgsettle"},
		{[]string{"--reorgsettle=2h"}, "reorgsettle"},
		{[]string{"--readymaxtipage=soon"}, "readymaxtipage"},
		{[]string{"--readymaxtipage=-5m"}, "readymaxtipage"},
		{[]string{"--allowdeepreorg=maybe"}, "allowdeepreorg"},
	} {
		var stderr bytes.Buffer
		if code := run(tc.args, envFrom(nil), &bytes.Buffer{}, &stderr); code == 0 {
			t.Errorf("%v: exit 0", tc.args)
		}
		if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %q, want one line naming %s", tc.args, msg, tc.want)
		}
	}
}
