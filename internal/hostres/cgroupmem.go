package hostres

import (
	"bytes"
	"path"
	"strconv"
	"strings"
)

// CgroupMemoryMax returns the hard memory limit of the cgroup (v2) this
// process runs in — systemd's MemoryMax= — in bytes, or 0 when there is
// none ("max") or it cannot be read (not Linux, cgroup v1, no /sys).
// readFile reads a file by absolute path (os.ReadFile).
func CgroupMemoryMax(readFile func(string) ([]byte, error)) int64 {
	self, err := readFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	// cgroup v2 has one line: "0::/system.slice/cfindexd.service".
	for line := range bytes.SplitSeq(self, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("0::"))
		if !ok {
			continue
		}
		dir := path.Clean("/" + string(rest))
		raw, err := readFile(path.Join("/sys/fs/cgroup", dir, "memory.max"))
		if err != nil {
			return 0
		}
		v := strings.TrimSpace(string(raw))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return n
	}
	return 0
}

// cgroupShare is the part of the cgroup's hard limit the soft limit may
// take: the rest is for what the Go runtime does not count (the binary,
// socket buffers, the store's pages in the page cache).
const cgroupShareNum, cgroupShareDen = 3, 4

// CapToCgroup returns limit, or three quarters of the cgroup's hard limit
// max when that is lower (and whether it was lowered).
func CapToCgroup(limit, max int64) (int64, bool) {
	if max <= 0 {
		return limit, false
	}
	if c := max / cgroupShareDen * cgroupShareNum; limit > c {
		return c, true
	}
	return limit, false
}
