// Package secret makes the bearer secrets the daemon hands out (a task's
// session token, a Slurm job's dial-back token): 256 random bits in
// base64url, kept only as their SHA-256.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// New returns a fresh token. It is the only copy of the secret: keep
// Hash(token), never the token.
func New() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// Hash is the form a token is kept and looked up in.
func Hash(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }
