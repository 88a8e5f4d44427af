package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/secret"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Bearer authenticates TCP callers by token: the file holds one line per
// token, "USER UID SHA256-HEX" (only the hash), and a request acts as
// USER, exactly as that user would over the Unix socket, as long as the
// name is still the account with uid UID: a token of an earlier account
// of the name is refused (401) and audited.
//
// A line of the previous version, "USER SHA256-HEX", has no uid: the
// package's postinst rewrites such lines with the uid the name has at
// the upgrade; one left over (the user database did not answer then, or
// written by hand) is bound to the name's uid the first time it is used,
// for as long as the daemon runs, with a warning to issue a new token.
type Bearer struct {
	Path     string
	Accounts *identity.Resolver // nil: identity.Default()
	Audit    *audit.Logger      // nil: refusals are only logged
	Log      *slog.Logger       // nil: slog.Default()

	mu      sync.Mutex
	modTime time.Time
	tokens  map[[sha256.Size]byte]tokenLine
	bound   map[[sha256.Size]byte]uint32 // legacy lines' uids, bound at first use
}

// tokenLine is one line of the tokens file.
type tokenLine struct {
	name   string
	uid    uint32
	legacy bool // "USER HEX": no uid
}

// Wrap admits requests with a known token and refuses the rest (401).
func (b *Bearer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var cred peer.Cred
		err := errNoToken
		if ok {
			if h, line, found := b.line(tok); found {
				cred, err = b.credOf(r.Context(), h, line)
			}
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agor"`)
			_, body := errorBody(rpc.Errorf(protocol.CodeTokenInvalid, protocol.ReasonUnauthenticated, "a valid bearer token is required"))
			writeJSON(w, http.StatusUnauthorized, body)
			return
		}
		next.ServeHTTP(w, r.WithContext(peer.NewContext(r.Context(), cred)))
	})
}

var errNoToken = errors.New("no token")

// line is the token's line, found by its hash. Hashes are compared in
// constant time.
func (b *Bearer) line(tok string) ([sha256.Size]byte, tokenLine, bool) {
	sum := secret.Hash(tok)
	for h, line := range b.load() {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return h, line, true
		}
	}
	return sum, tokenLine{}, false
}

// load rereads the file when it changed, so new tokens work at once.
func (b *Bearer) load() map[[sha256.Size]byte]tokenLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	fi, err := os.Stat(b.Path)
	if err != nil {
		b.tokens = nil
		return nil
	}
	if fi.ModTime().Equal(b.modTime) && b.tokens != nil {
		return b.tokens
	}
	data, err := os.ReadFile(b.Path)
	if err != nil {
		return b.tokens
	}
	b.tokens, b.modTime = parseTokens(data), fi.ModTime()
	return b.tokens
}

// parseTokens reads "USER UID HEX" lines, and the previous version's
// "USER HEX"; anything else is skipped.
func parseTokens(data []byte) map[[sha256.Size]byte]tokenLine {
	out := map[[sha256.Size]byte]tokenLine{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var line tokenLine
		switch len(f) {
		case 2:
			line.legacy = true
		case 3:
			uid, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				continue
			}
			line.uid = uint32(uid)
		default:
			continue
		}
		line.name = f[0]
		raw, err := hex.DecodeString(f[len(f)-1])
		if account.ValidName(line.name) != nil || err != nil || len(raw) != sha256.Size {
			continue
		}
		out[[sha256.Size]byte(raw)] = line
	}
	return out
}

// credOf is the token's account, if the name is still the account the
// token was made for.
func (b *Bearer) credOf(ctx context.Context, h [sha256.Size]byte, line tokenLine) (peer.Cred, error) {
	accounts := b.Accounts
	if accounts == nil {
		accounts = identity.Default()
	}
	u, err := accounts.LookupName(ctx, line.name)
	if errors.Is(err, identity.ErrNotFound) && !line.legacy {
		b.refuse(line, audit.UID{})
	}
	if err != nil {
		return peer.Cred{}, err
	}
	if line.legacy {
		line.uid = b.bind(h, line.name, u.UID)
	}
	if u.UID != line.uid {
		b.refuse(line, audit.UIDOf(u.UID))
		return peer.Cred{}, fmt.Errorf("token of %q uid %d, the name is uid %d now", line.name, line.uid, u.UID)
	}
	return peer.Cred{UID: u.UID, GID: u.GID}, nil
}

// bind returns the uid a legacy line is bound to, binding it to uid on
// its first use.
func (b *Bearer) bind(h [sha256.Size]byte, name string, uid uint32) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if got, ok := b.bound[h]; ok {
		return got
	}
	if b.bound == nil {
		b.bound = map[[sha256.Size]byte]uint32{}
	}
	b.bound[h] = uid
	b.log().Warn("bearer token line without a uid bound to the name's uid for as long as the daemon runs; make a new token with agorctl api-token new",
		"user", name, "uid", uid, "tokens_file", b.Path)
	return uid
}

// refuse audits a token of an account that no longer has its name (now:
// the uid the name has now, none when no account has it).
func (b *Bearer) refuse(line tokenLine, now audit.UID) {
	b.log().Warn("bearer token of an earlier account of this name refused", "user", line.name, "stored_uid", line.uid, "uid", now.String())
	if b.Audit != nil {
		b.Audit.Log(audit.Record{Action: audit.AccountMismatch, User: line.name, UID: now, StoredUID: audit.UIDOf(line.uid), Reason: "bearer token"})
	}
}

func (b *Bearer) log() *slog.Logger {
	if b.Log != nil {
		return b.Log
	}
	return slog.Default()
}
