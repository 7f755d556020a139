package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/daemonenv"
)

// StopLimit bounds the wait for cfindexd to exit after SIGTERM.
const StopLimit = 30 * time.Second

// Build builds ./cmd/cfindexd of this module into dir and returns the
// binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cfindexd.bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cfindexd")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/cfindexd: %w\n%s", err, out.Bytes())
	}
	return bin, nil
}

// moduleRoot is the directory holding the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module; run cfbench from the cfindexd module")
	}
	return filepath.Dir(gomod), nil
}

// Run is one cfindexd catch-up to measure.
type Run struct {
	Binary      string
	Node        *btcdtest.Node
	DataDir     string // usually a fresh directory: the store starts empty
	LogPath     string // cfindexd's JSON log is copied here
	TipHeight   uint32 // the node's tip; the run ends when the store has it
	Workers     int
	BatchBlocks int
	// Done, when set, is the log line that ends the run instead of the
	// store reaching TipHeight (a background build reaching it, say).
	Done func(LogLine) bool
	// Extra are more cfindexd flags (serve adds --listen).
	Extra []string
}

// args is cfindexd's command line for the run.
func (r Run) args() []string {
	host, port, _ := net.SplitHostPort(r.Node.RPCHost()) // btcdtest listens on 127.0.0.1:port
	return append([]string{
		"--chain=simnet",
		"--rpcconnect=" + host,
		"--rpcport=" + port,
		"--rpcuser=" + r.Node.User(),
		"--rpcpassword=" + r.Node.Password(),
		"--datadir=" + r.DataDir,
		"--httplisten=",
		"--listen=", // serve passes its own in Extra; flags parse left to right
		"--logformat=json",
		"--loglevel=info",
		"--workers=" + strconv.Itoa(r.Workers),
		"--batchblocks=" + strconv.Itoa(r.BatchBlocks),
	}, r.Extra...)
}

// Result is what one cfindexd catch-up cost.
type Result struct {
	// CatchUp is from process start to the log line reporting the node's
	// tip committed (or Run.Done's line).
	CatchUp time.Duration `json:"catch_up_ns"`
	// Lifetime is from process start to exit after SIGTERM.
	Lifetime time.Duration `json:"lifetime_ns"`
	// CPU is user plus system time of the whole process (rusage).
	CPU     time.Duration `json:"cpu_ns"`
	UserCPU time.Duration `json:"user_cpu_ns"`
	SysCPU  time.Duration `json:"sys_cpu_ns"`
	// PeakRSS is the process's maximum resident set size in bytes: its
	// VmHWM as last sampled (procstat.SamplesPeak; rusage's figure includes cfbench's
	// own peak), rusage's elsewhere.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// NodeCPU is btcd's CPU time during the catch-up (Linux /proc; zero
	// elsewhere): with cfindexd's CPU it shows which side is the bottleneck.
	NodeCPU time.Duration `json:"node_cpu_ns"`
	// LoggedBlocksPerS is the rate of cfindexd's last progress line.
	LoggedBlocksPerS float64 `json:"logged_blocks_per_s"`
	// RSS is the process's resident set over its life (Linux; empty
	// elsewhere); PeakAnon and PeakFile the largest anonymous and
	// file-backed parts among the samples.
	RSS      []procstat.RSSSample `json:"rss"`
	PeakAnon int64                `json:"peak_rss_anon_bytes"`
	PeakFile int64                `json:"peak_rss_file_bytes"`
	// GC summarises the Go runtime's collections (GODEBUG=gctrace=1).
	GC procstat.GCStats `json:"gc"`
	// Verified is true when the store the run left equals btcd's index.
	Verified bool `json:"verified"`
}

// CPUShare is cfindexd's CPU time as a fraction of its catch-up wall time.
func (r Result) CPUShare() float64 { return r.CPU.Seconds() / r.CatchUp.Seconds() }

// Measure runs cfindexd against the node into its datadir (usually
// empty) until its store reaches the tip (or run.Done's line), stops it
// with SIGTERM and returns what the catch-up cost.
func Measure(ctx context.Context, run Run) (Result, error) {
	proc, err := Start(ctx, run)
	if err != nil {
		return Result{}, err
	}
	defer proc.Kill()
	stopRSS := make(chan struct{})
	rssDone := procstat.SampleRSS(proc.cmd.Process.Pid, proc.start, stopRSS)
	nodeCPU0 := procstat.CPU(run.Node.PID())
	done := run.Done
	if done == nil {
		done = func(m LogLine) bool { return m.ReachedHeight(run.TipHeight) }
	}
	line, err := proc.WaitFor(ctx, done)
	if err != nil {
		return Result{}, err
	}
	res := Result{
		CatchUp: line.at.Sub(proc.start),
		NodeCPU: procstat.CPU(run.Node.PID()) - nodeCPU0,
	}
	if v, ok := line.fields["blocks_per_s"].(float64); ok {
		res.LoggedBlocksPerS = v
	}
	state, err := proc.Terminate(StopLimit)
	close(stopRSS)
	res.RSS = <-rssDone
	_, res.PeakAnon, res.PeakFile = procstat.RSSPeaks(res.RSS)
	if err != nil {
		return Result{}, err
	}
	res.GC = proc.gc
	res.Lifetime = time.Since(proc.start)
	var rusagePeak int64
	res.UserCPU, res.SysCPU, rusagePeak = procstat.Rusage(state)
	res.PeakRSS = procstat.SamplesPeak(res.RSS, rusagePeak)
	res.CPU = res.UserCPU + res.SysCPU
	if !state.Success() {
		return res, fmt.Errorf("cfindexd exited with %s after SIGTERM (log %s)", state, run.LogPath)
	}
	return res, nil
}

// Proc is a running cfindexd whose JSON log lines arrive on lines.
type Proc struct {
	cmd   *exec.Cmd
	start time.Time
	lines chan LogLine  // closed when stderr ends
	done  chan struct{} // closed when the process has exited
	state *os.ProcessState
	err   error                  // from Wait
	last  atomic.Pointer[string] // the last JSON log line, set by the reader
	gc    procstat.GCStats       // valid once done is closed
}

// LogLine is one decoded JSON log line and when cfbench read it.
type LogLine struct {
	at     time.Time
	fields map[string]any
}

// ReachedHeight tells whether the line reports the store at height h or
// above: a catch-up progress line, the line that ends a catch-up, or a
// per-block line.
func (l LogLine) ReachedHeight(h uint32) bool {
	v, ok := l.fields["height"].(float64)
	msg := l.fields["message"]
	return ok && v >= float64(h) && (msg == "catching up" || msg == "caught up" || msg == "indexed block")
}

// SPIndexedTo tells whether the line is the silent-payment backfill's
// report that the index has caught up with the tip, at height h or above.
func (l LogLine) SPIndexedTo(h uint32) bool {
	v, ok := l.fields["indexed_up_to"].(float64)
	return ok && v >= float64(h) && l.fields["message"] == "silent-payment index caught up with the tip"
}

// Start starts cfindexd with run's flags, copying its log to
// run.LogPath.
func Start(ctx context.Context, run Run) (*Proc, error) {
	if err := os.MkdirAll(run.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cfindexd datadir: %w", err)
	}
	logFile, err := os.Create(run.LogPath)
	if err != nil {
		return nil, fmt.Errorf("cfindexd log: %w", err)
	}
	cmd := exec.Command(run.Binary, run.args()...)
	// gctrace lines go to stderr beside the JSON log: the heap the GC
	// keeps live, against the RSS the kernel counts.
	cmd.Env = append(daemonenv.Clean(os.Environ()), "GODEBUG=gctrace=1")
	cmd.Stdout = io.Discard
	cmd.SysProcAttr = procstat.ChildProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("cfindexd stderr: %w", err)
	}
	p := &Proc{cmd: cmd, lines: make(chan LogLine, 1024), done: make(chan struct{})}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start cfindexd: %w", err)
	}
	go func() {
		defer logFile.Close()
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var lines Lines
		for sc.Scan() {
			at := time.Now()
			fmt.Fprintln(logFile, sc.Text())
			obj, gcLine := lines.split(sc.Bytes())
			if gcLine != nil {
				p.gc.Add(gcLine)
			}
			var m map[string]any
			if obj == nil || json.Unmarshal(obj, &m) != nil {
				continue
			}
			line := string(obj)
			p.last.Store(&line)
			select {
			case p.lines <- LogLine{at: at, fields: m}:
			default: // nobody waits for lines this far ahead: drop
			}
		}
		p.err = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Lines separates cfindexd's two kinds of stderr lines: its JSON log
// lines and the runtime's gctrace lines (GODEBUG=gctrace=1). The runtime
// writes a gctrace line in several writes and the logger a JSON line in
// one, so a JSON line can land in the middle of a gctrace line: "gc 3"
// then the whole JSON line, then " @0.028s 6%: …" on the next line. Read
// as one line, that JSON line would be lost (and with it, once, the
// "caught up" line a benchmark waited three minutes for), and the gctrace
// line would be read as two broken ones. The zero value is ready.
type Lines struct {
	gcHead []byte // the start of a gctrace line a JSON line interrupted
}

// split returns the JSON object a line holds (nil if none) and the
// gctrace line it completes (nil if none). A gctrace line never holds a
// '{'; a JSON line starts with one.
func (d *Lines) split(line []byte) (obj, gcLine []byte) {
	if i := bytes.IndexByte(line, '{'); i >= 0 {
		if i > 0 {
			d.gcHead = append(d.gcHead[:0], line[:i]...)
		}
		return line[i:], nil
	}
	if len(d.gcHead) > 0 {
		gcLine = append(d.gcHead, line...)
		d.gcHead = nil
		return nil, gcLine
	}
	return nil, line
}

// WaitFor returns the first log line satisfying pred. It fails when the
// process exits first or ctx ends.
func (p *Proc) WaitFor(ctx context.Context, pred func(LogLine) bool) (LogLine, error) {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.done
				return LogLine{}, fmt.Errorf("cfindexd exited (%v) before the awaited log line; last line: %s", p.err, p.LastLine())
			}
			if pred(l) {
				return l, nil
			}
		case <-ctx.Done():
			return LogLine{}, fmt.Errorf("waiting for cfindexd: %w; its last log line: %s", ctx.Err(), p.LastLine())
		}
	}
}

// LastLine returns the last JSON log line read so far ("" before any).
func (p *Proc) LastLine() string {
	if l := p.last.Load(); l != nil {
		return *l
	}
	return ""
}

// Terminate sends SIGTERM and waits up to limit for the exit.
func (p *Proc) Terminate(limit time.Duration) (*os.ProcessState, error) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("SIGTERM cfindexd: %w", err)
	}
	go func() { // keep draining so the logger never blocks on a full pipe
		for range p.lines {
		}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.done:
		return p.state, nil
	case <-t.C:
		return nil, fmt.Errorf("cfindexd did not exit within %s of SIGTERM", limit)
	}
}

// Kill ends the process if it still runs and waits for it.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	go func() {
		for range p.lines {
		}
	}()
	<-p.done
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited; ExitErr is then Wait's
// error.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// ExitErr: see Exited.
func (p *Proc) ExitErr() error { return p.err }

// At is when the line was read.
func (l LogLine) At() time.Time { return l.at }

// Field returns one field of the line (nil if absent); numbers are
// float64, as encoding/json decodes them.
func (l LogLine) Field(name string) any { return l.fields[name] }
