package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// credentialNames are the names the agents fetch (agents.yaml); others
// may be stored too.
var credentialNames = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"}

func newCreds(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "creds",
		Short: "store or remove API keys (write-only)",
		Long: `Store or remove API keys (e.g. ANTHROPIC_API_KEY) that the daemon hands an
agent just in time, into that one agent process's environment. Keys are
sealed at rest (AES-256-GCM) and never shown again. Yours, or with --daemon
the key every user falls back to (root and admins only).

` + daemonHelp,
		Example: `  printf '%s\n' "$KEY" | agorctl creds set ANTHROPIC_API_KEY
  agorctl creds delete ANTHROPIC_API_KEY --daemon`,
	}
	group(c, nil)
	c.AddCommand(newCredsSet(a), newCredsDelete(a))
	return c
}

func credsScope(daemonWide bool) string {
	if daemonWide {
		return apiwire.ScopeDaemon
	}
	return apiwire.ScopeUser
}

func completeCredentialNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return credentialNames, cobra.ShellCompDirectiveNoFileComp
}

func newCredsSet(a *app) *cobra.Command {
	var f apiFlags
	var daemonWide bool
	c := &cobra.Command{
		Use:   "set NAME",
		Short: "store an API key, read from standard input",
		Long: `Store the API key NAME, its value read from the first line of standard input
so that it never appears in ps or shell history. Prints "NAME set (SCOPE)".

` + daemonHelp,
		Example: `  printf '%s\n' "$KEY" | agorctl creds set ANTHROPIC_API_KEY
  agorctl creds set OPENAI_API_KEY --daemon <key.txt`,
		Args:              exactly(1, "NAME"),
		ValidArgsFunction: completeCredentialNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := readSecret(a.stdin)
			if err != nil {
				return err
			}
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			scope := credsScope(daemonWide)
			if _, err := c.SetCredential(ctx, args[0], apiwire.CredentialBody{Value: value, Scope: scope}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s set (%s)\n", args[0], scope)
			return nil
		},
	}
	addAPIFlags(c, &f)
	c.Flags().BoolVar(&daemonWide, "daemon", false, "the daemon-wide key every user falls back to (root and admins only)")
	return c
}

// readSecret is the first line of r, without its line end.
func readSecret(r io.Reader) (string, error) {
	value, err := bufio.NewReader(r).ReadString('\n')
	value = strings.TrimRight(value, "\r\n")
	if value == "" {
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("no value on standard input")
		}
		return "", err
	}
	return value, nil
}

func newCredsDelete(a *app) *cobra.Command {
	var f apiFlags
	var daemonWide bool
	c := &cobra.Command{
		Use:   "delete NAME",
		Short: "remove a stored API key",
		Long: `Remove the API key NAME: yours, or with --daemon the daemon-wide one.

` + daemonHelp,
		Example:           "  agorctl creds delete ANTHROPIC_API_KEY",
		Args:              exactly(1, "NAME"),
		ValidArgsFunction: completeCredentialNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			_, err := c.DeleteCredential(ctx, args[0], credsScope(daemonWide))
			return err
		},
	}
	addAPIFlags(c, &f)
	c.Flags().BoolVar(&daemonWide, "daemon", false, "the daemon-wide key (root and admins only)")
	return c
}

func newAPIToken(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "api-token",
		Short: "make bearer tokens for the daemon's TCP API",
		Long: `Make bearer tokens for the daemon's TCP API (api.tcp_address in
/etc/agor/config.yaml, off by default). Only a token's hash is kept.`,
		Example: "  sudo agorctl api-token new alice",
	}
	group(c, nil)
	var cfgPath string
	nw := &cobra.Command{
		Use:   "new USER",
		Short: "make a bearer token acting as USER",
		Long: `Make a bearer token acting as USER for the daemon's TCP API and print it,
once. Only its hash is kept, appended to api.tokens_file (root:agor 0640).
Run as root.`,
		Example:           "  sudo agorctl api-token new alice >alice.token",
		Args:              exactly(1, "USER"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(_ *cobra.Command, args []string) error {
			return newToken(a, cfgPath, args[0])
		},
	}
	nw.Flags().StringVar(&cfgPath, "config", config.DefaultPath, "daemon configuration `file` (api.tokens_file)")
	c.AddCommand(nw)
	return c
}

func newToken(a *app, cfgPath, name string) error {
	if err := account.ValidName(name); err != nil {
		return usageErrorf("%v", err)
	}
	u, err := identity.Default().LookupName(context.Background(), name)
	if err != nil {
		return fmt.Errorf("user %q: %w", name, err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	tok, err := appendToken(cfg.API.TokensFile, name, u.UID)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, tok)
	fmt.Fprintf(a.stderr, "token for %s saved (hash only) in %s; it is shown only now\n", name, cfg.API.TokensFile)
	return nil
}

// appendToken adds a new token's hash for name's account (uid: a later
// account given the name does not inherit it); the file is root:agor 0640
// so that the daemon (user agor) can read it and users cannot.
func appendToken(path, name string, uid uint32) (string, error) {
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
	if _, err := fmt.Fprintf(f, "%s %d %s\n", name, uid, apiwire.HashToken(tok)); err != nil {
		return "", err
	}
	return tok, f.Close()
}
