// Package miniotest runs a real MinIO server for tests: an S3-compatible
// bucket on loopback. MinIO is AGPL-licensed: it is built from the Go
// module proxy into the test cache and run as a separate process, never
// imported by this module's code nor committed (docs/testing.md).
package miniotest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// Version is the MinIO module version built (a pseudo-version of
// github.com/minio/minio, which publishes no semver tags).
const Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

// module is the main package built into the binary.
const module = "github.com/minio/minio"

// Binary returns the path of the minio binary, building it first if
// needed (a few minutes on two cores) into
// os.UserCacheDir()/cfindexd-test/minio-<Version>/minio; a file lock makes
// parallel test binaries wait for one build.
func Binary(tb testing.TB) string {
	tb.Helper()
	path, err := BuildBinary()
	if err != nil {
		tb.Fatalf("miniotest: %v", err)
	}
	return path
}

// BuildBinary is Binary without a testing.TB.
func BuildBinary() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	dir := filepath.Join(cache, "cfindexd-test", "minio-"+Version)
	target := filepath.Join(dir, "minio")
	if isExecutable(target) {
		return target, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create cache dir: %w", err)
	}
	unlock, err := btcdtest.LockFile(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(target) {
		return target, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("build dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	// go install pkg@version builds outside any module: this module's
	// go.mod has no say in MinIO's dependencies.
	cmd := exec.Command("go", "install", module+"@"+Version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w\n%s", module, Version, err, out.Bytes())
	}
	if err := os.Rename(filepath.Join(tmp, "minio"), target); err != nil {
		return "", fmt.Errorf("install minio binary: %w", err)
	}
	return target, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
