package netparams

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ErrUnknownChain is returned by Lookup for a chain name it does not know.
var ErrUnknownChain = errors.New("unknown chain")

// Network ties a chain name an operator types to the consensus parameters
// and the default ports of the node and of cfindexd on that network.
type Network struct {
	// Name is the canonical chain name (Core's -chain= value).
	Name string
	// Params are btcd's consensus parameters; Params.GenesisHash identifies
	// the network in the store.
	Params *chaincfg.Params
	// RPCPort is Bitcoin Core's default JSON-RPC port (btcd's for simnet,
	// which Core does not have); BtcdRPCPort is btcd's (btcd's
	// params.go). rpcport = 0 tries them in this order.
	RPCPort     int
	BtcdRPCPort int
	// NodeP2PPort is the node's default P2P port (Params.DefaultPort,
	// the same for Core and btcd), where nodep2p = auto looks.
	NodeP2PPort string
	// CookieSubdir is where Core keeps .cookie below its datadir.
	CookieSubdir string
	// P2PPort is cfindexd's default P2P port.
	P2PPort int
	// HTTPPort is cfindexd's default HTTP port.
	HTTPPort int
	// SilentPaymentsStart is the first height of the silent-payment index
	// (docs/silent-payments.md): taproot's activation where block-dn starts
	// its tweak files (mainnet 709,632, testnet3 2,011,968), 1 elsewhere.
	SilentPaymentsStart uint32
}

// List returns every network cfindexd can follow, main first, then the
// test networks, then the local ones (the order a probe of an unknown node
// tries them in). It is a function, not a package variable, so nothing can
// mutate it.
func List() []Network {
	nets := []Network{
		{Name: "main", Params: &chaincfg.MainNetParams, RPCPort: 8332, BtcdRPCPort: 8334, CookieSubdir: "", P2PPort: 8383, HTTPPort: 8384, SilentPaymentsStart: 709632},
		{Name: "test", Params: &chaincfg.TestNet3Params, RPCPort: 18332, BtcdRPCPort: 18334, CookieSubdir: "testnet3", P2PPort: 18383, HTTPPort: 18384, SilentPaymentsStart: 2011968},
		{Name: "testnet4", Params: &chaincfg.TestNet4Params, RPCPort: 48332, BtcdRPCPort: 48334, CookieSubdir: "testnet4", P2PPort: 48383, HTTPPort: 48384, SilentPaymentsStart: 1},
		{Name: "signet", Params: &chaincfg.SigNetParams, RPCPort: 38332, BtcdRPCPort: 38332, CookieSubdir: "signet", P2PPort: 38383, HTTPPort: 38384, SilentPaymentsStart: 1},
		{Name: "regtest", Params: &chaincfg.RegressionNetParams, RPCPort: 18443, BtcdRPCPort: 18334, CookieSubdir: "regtest", P2PPort: 18484, HTTPPort: 18485, SilentPaymentsStart: 1},
		{Name: "simnet", Params: &chaincfg.SimNetParams, RPCPort: 18556, BtcdRPCPort: 18556, CookieSubdir: "simnet", P2PPort: 18585, HTTPPort: 18586, SilentPaymentsStart: 1},
	}
	for i := range nets {
		nets[i].NodeP2PPort = nets[i].Params.DefaultPort
	}
	return nets
}

// All returns every network cfindexd can follow, keyed by canonical name.
func All() map[string]Network {
	nets := map[string]Network{}
	for _, nw := range List() {
		nets[nw.Name] = nw
	}
	return nets
}

// ByMagic returns the network whose P2P messages carry magic; ok is false
// for a magic no network of the table uses.
func ByMagic(magic wire.BitcoinNet) (nw Network, ok bool) {
	for _, nw := range List() {
		if nw.Params.Net == magic {
			return nw, true
		}
	}
	return Network{}, false
}

// Label names the network for messages: its canonical name, followed by
// the name Core gives its datadir when that differs ("test (testnet3)"),
// so that operators who know the network by either name recognise it.
func (nw Network) Label() string {
	if nw.CookieSubdir != "" && nw.CookieSubdir != nw.Name {
		return nw.Name + " (" + nw.CookieSubdir + ")"
	}
	return nw.Name
}

// aliases maps other spellings operators use (btcd's and Core's older
// names) to the canonical name.
func aliases() map[string]string {
	return map[string]string{
		"mainnet":  "main",
		"testnet":  "test",
		"testnet3": "test",
	}
}

// Lookup resolves a chain name, accepting aliases, case-insensitively.
// Errors wrap ErrUnknownChain.
func Lookup(name string) (Network, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if canon, ok := aliases()[n]; ok {
		n = canon
	}
	nets := All()
	if nw, ok := nets[n]; ok {
		return nw, nil
	}
	names := make([]string, 0, len(nets))
	for k := range nets {
		names = append(names, k)
	}
	sort.Strings(names)
	return Network{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownChain, name, strings.Join(names, ", "))
}
