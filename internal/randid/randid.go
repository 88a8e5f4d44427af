// Package randid makes the unguessable ids the daemon and the executor
// hand out (sessions, tasks, exec outputs, terminals, watches, permission
// requests): random bytes from crypto/rand, in hex.
package randid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns n random bytes as 2n hex digits. crypto/rand's Read never
// fails (it panics instead), so neither does New.
func New(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
