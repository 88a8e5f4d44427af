package meter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// tokenPrefix marks a gateway token (and its format's version).
const tokenPrefix = "agor-gw1."

// Signer makes and reads gateway tokens. A token names a session and
// the uid it runs as, signed with a key derived from the daemon's master
// key: it needs no state, so it survives a daemon restart with the
// agents that hold it, and it is the same for every turn of a session,
// so a warm agent keeps its environment. What it may do is decided when
// it is used: only while a task of its session runs, for that task.
type Signer struct{ key []byte }

// NewSigner derives the signing key from master (the credential store's
// key), so that the master key itself never signs anything.
func NewSigner(master []byte) *Signer {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("agor gateway token signing key v1"))
	return &Signer{key: m.Sum(nil)}
}

// Token is session's token for uid.
func (s *Signer) Token(session string, uid uint32) string {
	return tokenPrefix + session + "." + strconv.FormatUint(uint64(uid), 10) + "." + s.mac(session, uid)
}

// Read returns the session and uid tok was made for; false when tok is
// not one this signer made.
func (s *Signer) Read(tok string) (string, uint32, bool) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok || len(rest) > 256 {
		return "", 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] == "" {
		return "", 0, false
	}
	uid, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return "", 0, false
	}
	want := s.mac(parts[0], uint32(uid))
	if !hmac.Equal([]byte(parts[2]), []byte(want)) {
		return "", 0, false
	}
	return parts[0], uint32(uid), true
}

func (s *Signer) mac(session string, uid uint32) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(session + "\x00" + strconv.FormatUint(uint64(uid), 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
