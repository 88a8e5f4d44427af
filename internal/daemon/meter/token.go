package meter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// tokenPrefix marks a gateway credential (and its format's version);
// legacyPrefix the per-session tokens agents held before revision 4,
// which nothing accepts any more.
const (
	tokenPrefix  = "agor-gw2."
	legacyPrefix = "agor-gw1."
)

// Signer makes and reads gateway credentials. A credential names one
// task, its session and the uid it runs as, signed with a key derived
// from the daemon's master key: it needs no state, so a task the next
// daemon takes over keeps its own. The agent never holds it: the daemon
// gives it to the task's executor in execute_prompt, whose relay puts it
// on the connections of that task's processes only (internal/executor/
// door). What it may do is decided when it is used: only while that very
// task runs, from that uid.
type Signer struct{ key []byte }

// NewSigner derives the signing key from master (the credential store's
// key), so that the master key itself never signs anything.
func NewSigner(master []byte) *Signer {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("agor gateway token signing key v1"))
	return &Signer{key: m.Sum(nil)}
}

// Token is the credential of task, of session, run by the executor of
// uid. Task and session ids hold no dot (randid's alphabet).
func (s *Signer) Token(task, session string, uid uint32) string {
	u := strconv.FormatUint(uint64(uid), 10)
	return tokenPrefix + task + "." + session + "." + u + "." + s.mac(task, session, u)
}

// Claim is what a credential names.
type Claim struct {
	Task, Session string
	UID           uint32
}

// Read returns what tok names; false when tok is not one this signer
// made.
func (s *Signer) Read(tok string) (Claim, bool) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok || len(rest) > 256 {
		return Claim{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" {
		return Claim{}, false
	}
	uid, err := strconv.ParseUint(parts[2], 10, 32)
	if err != nil {
		return Claim{}, false
	}
	if !hmac.Equal([]byte(parts[3]), []byte(s.mac(parts[0], parts[1], parts[2]))) {
		return Claim{}, false
	}
	return Claim{Task: parts[0], Session: parts[1], UID: uint32(uid)}, true
}

func (s *Signer) mac(task, session, uid string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("task\x00" + task + "\x00" + session + "\x00" + uid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
