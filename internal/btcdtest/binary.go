package btcdtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// BtcdVersion is the btcd release the harness builds; it must match the
// github.com/btcsuite/btcd requirement in go.mod (a test checks it).
const BtcdVersion = "v0.26.2"

// btcdModule is the main package built into the binary.
const btcdModule = "github.com/btcsuite/btcd"

// Binary returns the path of a btcd binary built from the module version in
// go.mod. It is built once per machine into
// os.UserCacheDir()/cfindexd-test/btcd-<version> and reused; a file lock
// makes parallel test binaries wait for one build instead of racing. A
// failed build fails tb; BuildBinary is the same without a testing.TB.
func Binary(tb testing.TB) string {
	tb.Helper()
	path, err := BuildBinary()
	if err != nil {
		tb.Fatalf("btcdtest: %v", err)
	}
	return path
}

// BuildBinary returns the path of the btcd binary Binary returns, building
// it first if needed, for programs that have no testing.TB. It needs the go
// command and must run inside this module (go.mod pins the btcd version).
func BuildBinary() (string, error) {
	path, err := BinaryPath()
	if err != nil {
		return "", err
	}
	return buildBinaryIn(filepath.Dir(path))
}

// BinaryPath is where BuildBinary puts the btcd binary (it may not be
// built yet).
func BinaryPath() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	return filepath.Join(cache, "cfindexd-test", "btcd-"+BtcdVersion), nil
}

// buildBinaryIn builds btcd into dir unless it is already there.
func buildBinaryIn(dir string) (string, error) {
	target := filepath.Join(dir, "btcd-"+BtcdVersion)
	if isExecutable(target) {
		return target, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create cache dir: %w", err)
	}
	unlock, err := LockFile(target + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have built it while we waited for the lock.
	if isExecutable(target) {
		return target, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", target, os.Getpid())
	defer os.Remove(tmp) // no-op after a successful rename
	cmd := exec.Command("go", "build", "-o", tmp, btcdModule)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", btcdModule, root, err, out.Bytes())
	}
	if err := os.Rename(tmp, target); err != nil {
		return "", fmt.Errorf("install btcd binary: %w", err)
	}
	return target, nil
}

// moduleRoot is the directory of the main module's go.mod, where go.mod
// pins the btcd version.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// LockFile takes an exclusive flock on path, blocking until it is free.
func LockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
