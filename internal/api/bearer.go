package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/rpc"
)

// Bearer authenticates TCP callers by token: the file holds one line per
// token, "USER SHA256-HEX" (only the hash), and a request acts as USER,
// exactly as that user would over the Unix socket.
type Bearer struct {
	Path     string
	Accounts *identity.Resolver // nil: identity.Default()

	mu      sync.Mutex
	modTime time.Time
	tokens  map[[sha256.Size]byte]string
}

// Wrap admits requests with a known token and refuses the rest (401).
func (b *Bearer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		name := ""
		if ok {
			name = b.user(tok)
		}
		cred, err := b.credOf(r.Context(), name)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agor"`)
			_, body := errorBody(rpc.Errorf(protocol.CodeTokenInvalid, protocol.ReasonUnauthenticated, "a valid bearer token is required"))
			writeJSON(w, http.StatusUnauthorized, body)
			return
		}
		next.ServeHTTP(w, r.WithContext(peer.NewContext(r.Context(), cred)))
	})
}

// user is the token's user, or "". Hashes are compared in constant time.
func (b *Bearer) user(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	for h, name := range b.load() {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return name
		}
	}
	return ""
}

// load rereads the file when it changed, so new tokens work at once.
func (b *Bearer) load() map[[sha256.Size]byte]string {
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

// parseTokens reads "USER HEX" lines; anything else is skipped.
func parseTokens(data []byte) map[[sha256.Size]byte]string {
	out := map[[sha256.Size]byte]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || account.ValidName(f[0]) != nil {
			continue
		}
		raw, err := hex.DecodeString(f[1])
		if err != nil || len(raw) != sha256.Size {
			continue
		}
		out[[sha256.Size]byte(raw)] = f[0]
	}
	return out
}

func (b *Bearer) credOf(ctx context.Context, name string) (peer.Cred, error) {
	if name == "" {
		return peer.Cred{}, rpc.Errorf(protocol.CodeTokenInvalid, protocol.ReasonUnauthenticated, "no token")
	}
	accounts := b.Accounts
	if accounts == nil {
		accounts = identity.Default()
	}
	u, err := accounts.LookupName(ctx, name)
	if err != nil {
		return peer.Cred{}, err
	}
	return peer.Cred{UID: u.UID, GID: u.GID}, nil
}
