package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// helperStepEnv names the creation step the "create" helper stops at.
const helperStepEnv = "CFINDEXD_STORE_STEP"

var createSteps = []string{stepTempCreated, stepSchema, stepSynced, stepLinked, stepDirSynced}

// creatingFiles lists the temporary creation files in dir.
func creatingFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+creatingInfix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkNoneOrValid asserts the state an interrupted creation may leave at
// path: no file, or a complete empty store that opens.
func checkNoneOrValid(t *testing.T, path string, genesis chainhash.Hash) (exists bool) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := fileSize(f)
	err = checkFile(f, size)
	f.Close()
	if err != nil {
		t.Fatalf("interrupted creation left a damaged store: %v", err)
	}
	return true
}

// TestCreateInterrupted fails the creation of a new store after each of its
// steps, as a full disk or an I/O error would: Open fails naming the step,
// and the path holds no file or a complete store; the next Open creates or
// opens a valid empty store and no temporary file is left behind.
func TestCreateInterrupted(t *testing.T) {
	genesis := genChain(95, nil, 1)[0].Hash
	for _, step := range createSteps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "filters.db")
			enospc := fmt.Errorf("write: %w", syscall.ENOSPC)
			_, err := Open(path, genesis, Options{createHook: func(s string) error {
				if s == step {
					return enospc
				}
				return nil
			}})
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), step) {
				t.Fatalf("Open: %v, want the injected ENOSPC after %s", err, step)
			}
			exists := checkNoneOrValid(t, path, genesis)
			if linked := step == stepLinked || step == stepDirSynced; exists != linked {
				t.Fatalf("store exists %v after a failure at %s", exists, step)
			}
			if left := creatingFiles(t, dir); len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
			s, err := Open(path, genesis, Options{})
			if err != nil {
				t.Fatalf("Open after the failed creation: %v", err)
			}
			if _, ok := s.Tip(); ok {
				t.Fatal("a new store has a tip")
			}
			if err := s.CommitBatch(genChain(95, nil, 3)); err != nil {
				t.Fatal(err)
			}
			s.Close()
		})
	}
}

// createHelper creates a store at path, reporting each step on stdout and
// hanging at the step named stopAt until it is killed.
func createHelper(path string, genesis chainhash.Hash, stopAt string) {
	_, err := Open(path, genesis, Options{createHook: func(s string) error {
		fmt.Printf("step %s\n", s)
		if s == stopAt {
			time.Sleep(time.Minute)
		}
		return nil
	}})
	fmt.Printf("done %v\n", err)
}

// TestCreateKilled kills a process with SIGKILL while it creates a store,
// after each step: the path holds no file or a complete store, and the
// temporary file a kill leaves is removed by the next Open once it is
// stale.
func TestCreateKilled(t *testing.T) {
	genesis := genChain(96, nil, 1)[0].Hash
	for _, step := range createSteps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "filters.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"=create", helperPathEnv+"="+path,
				helperGenesisEnv+"="+genesis.String(), helperStepEnv+"="+step)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reached := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if sc.Text() == "step "+step {
						reached <- true
						return
					}
				}
				reached <- false
			}()
			select {
			case ok := <-reached:
				if !ok {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("helper never reached step %s", step)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper did not reach step %s in time", step)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			exists := checkNoneOrValid(t, path, genesis)
			if linked := step == stepLinked || step == stepDirSynced; exists != linked {
				t.Fatalf("store exists %v after a kill at %s", exists, step)
			}
			left := creatingFiles(t, dir)
			// Age the leftovers past staleCreatingAge: the next Open
			// removes them.
			old := time.Now().Add(-2 * staleCreatingAge)
			for _, f := range left {
				if err := os.Chtimes(f, old, old); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(path, genesis, Options{NoSync: true})
			if err != nil {
				t.Fatalf("Open after the kill: %v", err)
			}
			s.Close()
			if now := creatingFiles(t, dir); len(now) > 0 {
				t.Fatalf("stale temporary files not removed: %v", now)
			}
			t.Logf("killed after %s: store exists %v, %d temporary file(s) left by the kill", step, exists, len(left))
		})
	}
}
