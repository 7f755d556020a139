package p2p

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

func TestDecodePayload(t *testing.T) {
	me := wire.NewNetAddressIPPort(nil, 0, 0)
	version := payloadOf(wire.NewMsgVersion(me, me, 1, 2))
	getcf := payloadOf(wire.NewMsgGetCFilters(0, 1, &chainhash.Hash{}))
	tests := []struct {
		name    string
		cmd     string
		payload []byte
		wantErr error
	}{
		{"version", wire.CmdVersion, version, nil},
		{"version with a future extension", wire.CmdVersion, append(bytes.Clone(version), 1, 2, 3), nil},
		{"truncated version", wire.CmdVersion, version[:20], ErrMisbehaving},
		{"getcfilters", wire.CmdGetCFilters, getcf, nil},
		{"getcfilters with trailing byte", wire.CmdGetCFilters, append(bytes.Clone(getcf), 0), ErrMisbehaving},
		{"truncated getcfilters", wire.CmdGetCFilters, getcf[:36], ErrMisbehaving},
		{"inv claiming 50,001 entries", wire.CmdInv, []byte{0xfe, 0x51, 0xc3, 0x00, 0x00}, ErrMisbehaving},
		{"not decoded here", wire.CmdBlock, nil, errors.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePayload(tc.cmd, tc.payload, wire.ProtocolVersion)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestReadFrameCapsBeforeReadingPayload(t *testing.T) {
	regtest := chaincfg.RegressionNetParams.Net
	for cmd, rule := range commandRules {
		// A header one byte over the cap, and no payload: an error at once
		// (a reader that tried to read the payload would hit EOF instead).
		r := bytes.NewReader(rawHeader(regtest, cmd, rule.maxPayload+1))
		var hdr [frameHeaderSize]byte
		if _, err := readFrame(r, regtest, wire.ProtocolVersion, &hdr); !errors.Is(err, ErrMisbehaving) {
			t.Errorf("%s over cap: %v", cmd, err)
		}
	}
}
