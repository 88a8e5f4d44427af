package task

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// AgentsFile is agents.yaml read again whenever it changes, so that an
// operator's edit reaches each person's next prompt without restarting
// executors. A warm agent started with other settings is restarted for
// that prompt (settingsOf includes the binary and environment).
type AgentsFile struct {
	Path string
	Log  *slog.Logger

	mu     sync.Mutex
	stamp  fileStamp // of the file agents was read from
	agents Agents
}

// fileStamp tells a changed file from the one read: an editor's rename
// changes the inode, an in-place write the size or modification time.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
	missing   bool
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return fileStamp{missing: true}, nil
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("agents: %w", err)
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st, nil
}

// OpenAgents reads path once; an error is the executor's to refuse to
// start with.
func OpenAgents(path string, log *slog.Logger) (*AgentsFile, error) {
	f := &AgentsFile{Path: path, Log: log}
	if _, err := f.Current(); err != nil {
		return nil, err
	}
	return f, nil
}

// Current is the settings as the file holds them now: read again when
// it changed since the last read (a stat per prompt otherwise). A file
// that no longer parses is an error naming it, for the prompt to fail
// with, until it is fixed; a missing file is every default.
func (f *AgentsFile) Current() (Agents, error) {
	st, err := stampOf(f.Path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agents != nil && st == f.stamp {
		return f.agents, nil
	}
	a, err := LoadAgents(f.Path)
	if err != nil {
		return nil, err
	}
	if f.agents != nil && f.Log != nil {
		f.Log.Info("agent settings read again: the file changed", "path", f.Path)
	}
	f.stamp, f.agents = st, a
	return a, nil
}
