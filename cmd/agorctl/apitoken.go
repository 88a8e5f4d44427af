package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/apiwire"
	"github.com/agor-sh/agor/internal/config"
)

// apiTokenCmd: agorctl api-token new USER — makes a bearer token for the
// daemon's TCP API (api.tcp_address), keeps only its hash in
// api.tokens_file, and prints the token once.
func apiTokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl api-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "daemon configuration `file` (api.tokens_file)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) != 2 || rest[0] != "new" || account.ValidName(rest[1]) != nil {
		fmt.Fprintln(stderr, "agorctl api-token: usage: agorctl api-token new USER")
		return 2
	}
	if _, err := user.Lookup(rest[1]); err != nil {
		return fail(stderr, "api-token", fmt.Errorf("no user %q", rest[1]))
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return fail(stderr, "api-token", err)
	}
	tok, err := appendToken(cfg.API.TokensFile, rest[1])
	if err != nil {
		return fail(stderr, "api-token", err)
	}
	fmt.Fprintln(stdout, tok)
	fmt.Fprintf(stderr, "token for %s saved (hash only) in %s; it is shown only now\n", rest[1], cfg.API.TokensFile)
	return 0
}

// appendToken adds a new token's hash for name; the file is root:agor 0640
// so that the daemon (user agor) can read it and users cannot.
func appendToken(path, name string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := "agor_" + hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if g, err := user.LookupGroup("agor"); err == nil {
		gid, _ := strconv.Atoi(g.Gid)
		_ = f.Chown(0, gid)
	}
	if _, err := fmt.Fprintf(f, "%s %s\n", name, apiwire.HashToken(tok)); err != nil {
		return "", err
	}
	return tok, f.Close()
}
