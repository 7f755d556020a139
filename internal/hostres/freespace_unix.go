//go:build unix

package hostres

import "syscall"

// FreeBytes returns the bytes available to this user on the filesystem of
// dir, and whether it could tell.
func FreeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
