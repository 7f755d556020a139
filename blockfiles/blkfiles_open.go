package blockfiles

import (
	"os"
	"sync"
)

// maxOpenBlockFiles bounds the blk and rev files a Dir keeps open
// between reads: a catch-up reads the same few files block after block,
// and reopening them for every block cost more system calls than reading.
const maxOpenBlockFiles = 16

// openFiles keeps recently read files open, read-only, and closes the
// least recently used one beyond maxOpenBlockFiles once nobody reads it.
// Safe for concurrent use; *os.File.ReadAt is.
type openFiles struct {
	mu    sync.Mutex
	files map[string]*openFile
	clock uint64
}

type openFile struct {
	f    *os.File
	refs int
	used uint64
}

// acquire returns path opened read-only and a release to call when done
// reading it.
func (o *openFiles) acquire(path string) (*os.File, func(), error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil {
		o.files = map[string]*openFile{}
	}
	of := o.files[path]
	if of == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		of = &openFile{f: f}
		o.files[path] = of
	}
	o.clock++
	of.refs++
	of.used = o.clock
	o.evictLocked()
	return of.f, func() {
		o.mu.Lock()
		of.refs--
		o.mu.Unlock()
	}, nil
}

// forget closes path if open and unused (the file was removed or
// rewritten); a reader still using it keeps its handle until the next
// eviction.
func (o *openFiles) forget(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if of := o.files[path]; of != nil && of.refs == 0 {
		of.f.Close()
		delete(o.files, path)
	}
}

func (o *openFiles) evictLocked() {
	for len(o.files) > maxOpenBlockFiles {
		var victim string
		oldest := ^uint64(0)
		for p, of := range o.files {
			if of.refs == 0 && of.used < oldest {
				victim, oldest = p, of.used
			}
		}
		if victim == "" {
			return // all in use: a few more for a moment
		}
		o.files[victim].f.Close()
		delete(o.files, victim)
	}
}

// closeAll closes every file nobody reads.
func (o *openFiles) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, of := range o.files {
		if of.refs == 0 {
			of.f.Close()
			delete(o.files, p)
		}
	}
}
