package btcdtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

const (
	// startTimeout bounds how long Start waits for btcd to answer RPC.
	startTimeout = 60 * time.Second
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 10 * time.Second
	// logTailLines is how much of btcd's log a failed test prints.
	logTailLines = 60
	// logFileName is btcd's stdout+stderr, kept in the datadir.
	logFileName = "btcd.out.log"
	// portAttempts bounds the first launch's tries with fresh ports when
	// another process took a port between freePorts and btcd's bind.
	portAttempts = 3
)

// Options configures Start.
type Options struct {
	// Net is "regtest" (default) or "simnet". Use simnet when the chain must
	// survive Restart: btcd wipes regtest on every start.
	Net string
	// DataDir is btcd's data directory; empty means a fresh tb.TempDir()
	// (Start) or a new temporary directory (StartNode).
	DataDir string
	// TxIndex turns on --txindex (getrawtransaction for any tx).
	TxIndex bool
	// WalletSeed selects the key set of Node.Wallet, whose mining address
	// receives every coinbase from Generate.
	WalletSeed int64
	// TLS runs btcd's RPC server with TLS, its default (no --notls): btcd
	// writes its certificate to Node.RPCCert at its first start.
	TLS bool
	// RPCPassword replaces the default RPC password.
	RPCPassword string
	// Extra are appended to btcd's command line as given.
	Extra []string
}

// Node is a running (or stopped) btcd process. Its methods are safe for
// concurrent use except Stop/Restart, which must not race with each other.
type Node struct {
	bin     string
	opts    Options
	params  *chaincfg.Params
	dataDir string
	rpcAddr string
	p2pAddr string
	user    string
	pass    string
	wallet  *Wallet

	// launched is set once btcd answered RPC on the node's ports; from then
	// on they are the node's for good (Restart keeps them).
	launched bool

	mu   sync.Mutex
	proc *exec.Cmd
	done <-chan struct{} // closed when proc has exited
	rpc  *rpcClient
}

// Start builds (once) and starts btcd with opts on loopback ports, waits
// until it answers RPC and registers tb.Cleanup to stop it (printing the
// tail of btcd's output when tb failed). An empty opts.DataDir becomes a
// fresh tb.TempDir(). It fails tb on any error; StartNode is the same
// without a testing.TB.
func Start(tb testing.TB, opts Options) *Node {
	tb.Helper()
	if opts.DataDir == "" {
		opts.DataDir = tb.TempDir()
	}
	n, err := newNode(opts)
	if err != nil {
		tb.Fatalf("btcdtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := n.Stop(); err != nil {
			tb.Errorf("btcdtest: stop: %v", err)
		}
		if tb.Failed() {
			n.logTail(tb)
		}
	})
	if err := n.Launch(); err != nil {
		tb.Fatalf("btcdtest: %v", err)
	}
	return n
}

// StartNode builds (once) and starts btcd with opts on loopback ports and
// waits until it answers RPC, for programs that have no testing.TB (the
// cfbench benchmark). The caller must Stop the node. An empty opts.DataDir
// becomes a new directory under os.TempDir(), which the caller removes
// (Node.DataDir) once the node is stopped. If btcd fails to start, the
// process is stopped and the error says where its log is.
func StartNode(opts Options) (*Node, error) {
	if opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "btcdtest-")
		if err != nil {
			return nil, fmt.Errorf("btcdtest: datadir: %w", err)
		}
		opts.DataDir = dir
	}
	n, err := newNode(opts)
	if err != nil {
		return nil, fmt.Errorf("btcdtest: %w", err)
	}
	if err := n.Launch(); err != nil {
		_ = n.Stop()
		return nil, fmt.Errorf("btcdtest: %w", err)
	}
	return n, nil
}

// newNode resolves opts (which must name a DataDir), builds the binary and
// reserves the ports of a node that is not started yet.
func newNode(opts Options) (*Node, error) {
	if opts.Net == "" {
		opts.Net = "regtest"
	}
	var params *chaincfg.Params
	switch opts.Net {
	case "regtest":
		params = &chaincfg.RegressionNetParams
	case "simnet":
		params = &chaincfg.SimNetParams
	default:
		return nil, fmt.Errorf("unsupported network %q (want regtest or simnet)", opts.Net)
	}
	bin, err := BuildBinary()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return &Node{
		bin:     bin,
		opts:    opts,
		params:  params,
		dataDir: opts.DataDir,
		rpcAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		p2pAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		user:    "btcdtest",
		pass:    cmp.Or(opts.RPCPassword, randomPassword()),
		wallet:  NewWallet(params, opts.WalletSeed),
	}, nil
}

// args is btcd's command line.
func (n *Node) args() []string {
	args := []string{
		"--" + n.opts.Net,
		"--configfile=" + os.DevNull,
		"--nodnsseed",
		"--datadir=" + filepath.Join(n.dataDir, "data"),
		"--logdir=" + filepath.Join(n.dataDir, "logs"),
		"--rpcuser=" + n.user,
		"--rpcpass=" + n.pass,
		"--rpclisten=" + n.rpcAddr,
		"--listen=" + n.p2pAddr,
		"--miningaddr=" + n.wallet.MiningAddress(),
		"--debuglevel=info",
	}
	if n.opts.TxIndex {
		args = append(args, "--txindex")
	}
	if n.opts.TLS {
		args = append(args, "--rpccert="+n.RPCCert(), "--rpckey="+filepath.Join(n.dataDir, "rpc.key"))
	} else {
		args = append(args, "--notls")
	}
	return append(args, n.opts.Extra...)
}

// randomPassword returns a fresh RPC password, so that a node answering on
// a port this Node chose but another process took (another test's btcd)
// refuses our credentials instead of being mistaken for ours.
func randomPassword() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "btcdtest-" + hex.EncodeToString(b[:])
}

// Launch starts the btcd process with the node's datadir, ports and options
// and waits until it answers RPC. Start and StartNode call it; call it again
// after Stop to bring a node back without a testing.TB (Restart does Stop
// and Launch). It is an error to launch a running node. On the first launch
// only, a btcd that exits before answering (it could not bind a port
// another process took after freePorts released it) or a port that answers
// with other credentials (another process's node) is retried on fresh
// ports.
func (n *Node) Launch() error {
	err := n.launch()
	for attempt := 1; err != nil && !n.launched && attempt < portAttempts &&
		(errors.Is(err, ErrNodeExited) || errors.Is(err, ErrAuth)); attempt++ {
		if serr := n.Stop(); serr != nil {
			return errors.Join(err, serr)
		}
		ports, perr := freePorts(2)
		if perr != nil {
			return errors.Join(err, perr)
		}
		n.rpcAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		n.p2pAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
		err = n.launch()
	}
	if err == nil {
		n.launched = true
	}
	return err
}

// launch starts btcd once and waits until it answers RPC.
func (n *Node) launch() error {
	if n.running() {
		return fmt.Errorf("launch btcd: %w", ErrNodeRunning)
	}
	cmd, done, err := n.spawn(n.args())
	if err != nil {
		return err
	}
	rpc := newRPCClient(n.rpcAddr, n.user, n.pass)
	if n.opts.TLS {
		rpc = newTLSRPCClient(n.rpcAddr, n.user, n.pass, n.RPCCert())
	}
	n.mu.Lock()
	n.proc, n.done, n.rpc = cmd, done, rpc
	n.mu.Unlock()
	return n.waitReady(rpc, done)
}

// running reports whether the node's btcd process has been launched and has
// neither been stopped nor exited.
func (n *Node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// spawn starts the btcd binary with args, its output appended to the log
// file, and returns the command and a channel closed when it has exited.
func (n *Node) spawn(args []string) (*exec.Cmd, <-chan struct{}, error) {
	logFile, err := os.OpenFile(filepath.Join(n.dataDir, logFileName),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open btcd log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(n.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start btcd: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd, done, nil
}

// RunOnce runs btcd to completion with the node's command line plus extra
// (say "--dropcfindex", which makes btcd drop its filter index and exit),
// its output appended to LogPath. The node must be stopped: btcd locks its
// datadir. If ctx ends first the process is killed.
func (n *Node) RunOnce(ctx context.Context, extra ...string) error {
	if n.running() {
		return fmt.Errorf("run btcd once: %w", ErrNodeRunning)
	}
	cmd, done, err := n.spawn(append(n.args(), extra...))
	if err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("run btcd %v: %w", extra, ctx.Err())
	}
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("run btcd %v: %s (log %s)", extra, cmd.ProcessState, n.LogPath())
	}
	return nil
}

// waitReady polls getblockcount until btcd answers, it exits, or the
// deadline passes.
func (n *Node) waitReady(rpc *rpcClient, done <-chan struct{}) error {
	limit := testtime.Scale(startTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		var height int64
		err := rpc.call(callCtx, "getblockcount", nil, &height)
		callCancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrAuth) {
			return err
		}
		select {
		case <-done:
			return fmt.Errorf("%w before answering RPC on %s (log %s)", ErrNodeExited, n.rpcAddr,
				filepath.Join(n.dataDir, logFileName))
		case <-ctx.Done():
			return fmt.Errorf("btcd did not answer RPC on %s within %v: %w", n.rpcAddr, limit, err)
		case <-tick.C:
		}
	}
}

// Stop stops btcd by PID: SIGTERM, then SIGKILL if it has not exited after
// 10 s. It waits for the process to be gone. Stopping a stopped node is a
// no-op.
func (n *Node) Stop() error { return n.StopWithin(stopTimeout) }

// StopWithin is Stop waiting up to limit for btcd to exit after SIGTERM:
// btcd flushes its UTXO cache (up to 250 MiB) on the way out, which after
// a large chain takes longer than Stop's 10 s, and a killed btcd leaves a
// database it has to repair.
func (n *Node) StopWithin(limit time.Duration) error {
	n.mu.Lock()
	proc, done, rpc := n.proc, n.done, n.rpc
	n.proc = nil
	n.mu.Unlock()
	if proc == nil {
		return nil
	}
	rpc.close()
	select {
	case <-done:
		return nil // already exited
	default:
	}
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		select {
		case <-done:
			return nil
		default:
		}
		return fmt.Errorf("SIGTERM btcd pid %d: %w", proc.Process.Pid, err)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	}
	if err := proc.Process.Kill(); err != nil {
		return fmt.Errorf("SIGKILL btcd pid %d: %w", proc.Process.Pid, err)
	}
	<-done
	return fmt.Errorf("btcd pid %d ignored SIGTERM for %v, killed", proc.Process.Pid, limit)
}

// Restart stops btcd and starts it again with the same datadir, ports and
// options. On simnet the chain survives; on regtest btcd wipes it, so the
// node comes back at genesis. It fails tb on any error; without a
// testing.TB, call Stop and Launch.
func (n *Node) Restart(tb testing.TB) {
	tb.Helper()
	if err := n.Stop(); err != nil {
		tb.Fatalf("btcdtest: restart: %v", err)
	}
	if err := n.Launch(); err != nil {
		tb.Fatalf("btcdtest: restart: %v", err)
	}
}

// PID is the process id of the running btcd, 0 when stopped.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.Process.Pid
}

// RPCHost is btcd's RPC listen address, host:port on 127.0.0.1.
func (n *Node) RPCHost() string { return n.rpcAddr }

// RPCCert is where btcd keeps its RPC certificate (Options.TLS): the file
// a client trusts, as cfindexd's rpccert.
func (n *Node) RPCCert() string { return filepath.Join(n.dataDir, "rpc.cert") }

// User is the RPC user name.
func (n *Node) User() string { return n.user }

// Password is the RPC password.
func (n *Node) Password() string { return n.pass }

// P2PAddr is btcd's peer-to-peer listen address, host:port on 127.0.0.1.
func (n *Node) P2PAddr() string { return n.p2pAddr }

// Params are the chain parameters of the node's network.
func (n *Node) Params() *chaincfg.Params { return n.params }

// DataDir is the directory holding btcd's data, logs and captured output.
func (n *Node) DataDir() string { return n.dataDir }

// LogPath is the file receiving btcd's stdout and stderr.
func (n *Node) LogPath() string { return filepath.Join(n.dataDir, logFileName) }

// Wallet is the wallet (seed Options.WalletSeed) that owns the mining
// address, so it receives every coinbase of Generate.
func (n *Node) Wallet() *Wallet { return n.wallet }

// freePorts reserves count distinct loopback ports by listening on port 0,
// then releases them for btcd.
func freePorts(count int) ([]int, error) {
	ports := make([]int, 0, count)
	for range count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
