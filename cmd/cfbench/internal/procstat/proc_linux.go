package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// ChildProcAttr makes the kernel kill a child when cfbench dies without
// cleaning up.
func ChildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// MaxRSSBytes converts rusage's Maxrss, in KiB on Linux, to bytes.
func MaxRSSBytes(ru *syscall.Rusage) int64 { return ru.Maxrss * 1024 }

// CPU is the user plus system time pid has used so far, or 0 when it
// cannot be read.
func CPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis start at field 3 (state), so utime (14) and stime (15)
	// are the 12th and 13th from there.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// PeakRSS is pid's peak resident set size (VmHWM) in bytes, or 0
// when it cannot be read.
func PeakRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 && string(f[1]) == "kB" {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// TCPActiveOpens is the machine's count of TCP connect()s so far
// (/proc/net/snmp Tcp ActiveOpens), or -1 when it cannot be read. The
// difference over a run counts the connections opened on an otherwise idle
// machine: btcd closes its RPC connection after every HTTP request, so this
// is the number of RPC requests cfindexd made.
func TCPActiveOpens() int64 {
	data, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return -1
	}
	var names []string
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Tcp:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if names == nil {
			names = fields
			continue
		}
		for i, name := range names {
			if name == "ActiveOpens" && i < len(fields) {
				if n, err := strconv.ParseInt(fields[i], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// LoadAverage is the machine's 1-, 5- and 15-minute load average
// (/proc/loadavg), or "" when it cannot be read. Reports carry it because
// other work on the machine shifts every number here.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// RSS is pid's resident set now (VmRSS), its anonymous and
// file-backed parts (RssAnon, RssFile: the store's mmap counts there) and
// its peak so far (VmHWM), in bytes; ok is false when /proc cannot be
// read.
func RSS(pid int) (rss, anon, file, hwm int64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, 0, false
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		name, rest, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &rss
		case "RssAnon":
			dst = &anon
		case "RssFile":
			dst = &file
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 2 && string(f[1]) == "kB" {
			if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
				*dst = kb * 1024
			}
		}
	}
	return rss, anon, file, hwm, rss > 0
}

// RaiseNoFile raises this process's open file limit to its hard limit
// (children inherit it) and returns the soft limit in force.
func RaiseNoFile() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}
