package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// rotatedSuffix is how a rotated file is named after the live one:
// audit.jsonl.20261123T172500.000000000Z (UTC, sortable by name).
const rotatedLayout = "20060102T150405.000000000Z"

// rotateLocked moves a full file aside and starts a new one, past
// MaxBytes; the old file is synced first, so nothing logged is lost.
func (l *Logger) rotateLocked() {
	if l.file == nil || l.maxBytes <= 0 || l.size < l.maxBytes {
		return
	}
	_ = l.file.Sync()
	_ = l.file.Close()
	l.file = nil
	old := l.path + "." + l.now().UTC().Format(rotatedLayout)
	if err := os.Rename(l.path, old); err != nil {
		l.log.Error("audit file rotation failed", "err", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		l.fileErr = fmt.Errorf("open audit file: %w", err)
		l.log.Error("audit file reopen failed; records still go to the journal", "err", err)
		return
	}
	l.file, l.size = f, fileSize(f)
	l.log.Info("audit file rotated", "rotated_to", old)
	l.pruneLocked()
}

// Prune removes rotated files older than MaxAge (by the time in their
// name); the daemon's sweep calls it.
func (l *Logger) Prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked()
}

func (l *Logger) pruneLocked() {
	if l.path == "" || l.maxAge <= 0 {
		return
	}
	old, _ := filepath.Glob(l.path + ".*")
	for _, p := range old {
		at, err := time.Parse(rotatedLayout, strings.TrimPrefix(p, l.path+"."))
		if err == nil && l.now().Sub(at) > l.maxAge {
			if err := os.Remove(p); err == nil {
				l.log.Info("rotated audit file removed", "file", p)
			}
		}
	}
}

func fileSize(f *os.File) int64 {
	if fi, err := f.Stat(); err == nil {
		return fi.Size()
	}
	return 0
}
