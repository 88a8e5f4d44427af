package task

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// gatewayRelay is this executor's loopback port to the daemon's model
// gateway: bytes relayed untouched to its Unix socket, where the daemon
// knows this executor's person by SO_PEERCRED and the task by the token
// the agent presents. Started with the first task that uses it.
type gatewayRelay struct {
	once sync.Once
	base string // http://127.0.0.1:PORT
	err  error
	stop func()
}

func (g *gatewayRelay) start(socket string, log *slog.Logger) (string, error) {
	g.once.Do(func() {
		if socket == "" {
			g.err = fmt.Errorf("this executor was started without --gateway-socket")
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			g.err = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := (&egress.Relay{Socket: socket, Log: log}).Serve(ctx, ln); err != nil {
				log.Error("gateway relay stopped", "err", err)
			}
		}()
		g.base, g.stop = "http://"+ln.Addr().String(), func() { cancel(); <-done }
		log.Info("gateway relay served", "address", ln.Addr().String(), "gateway_socket", socket)
	})
	return g.base, g.err
}

func (g *gatewayRelay) close() {
	g.once.Do(func() {}) // none starts after this
	if g.stop != nil {
		g.stop()
	}
}

// credentials are what the agent authenticates with: under the gateway
// its session's token and the relay's address in place of the provider's
// (variables set over agents.yaml's), and no key is asked for; otherwise
// the key, fetched just in time.
func (s *Service) credentials(ctx context.Context, h *host, p protocol.ExecutePromptParams, a agent.Adapter) (string, map[string]string, error) {
	if p.GatewayToken == "" {
		key, err := h.apiKey(ctx, a.CredentialKey())
		return key, nil, err
	}
	base, err := s.gw.start(s.GatewaySocket, s.log())
	if err != nil {
		return "", nil, fmt.Errorf("the model gateway: %w", err)
	}
	return p.GatewayToken, gatewayEnv(p.Tool, base), nil
}

// gatewayEnv points tool's CLI at base: each at the path its requests
// expect below it (the OpenAI clients' base includes /v1).
func gatewayEnv(tool, base string) map[string]string {
	switch tool {
	case protocol.ToolClaudeCode:
		return map[string]string{"ANTHROPIC_BASE_URL": base}
	case protocol.ToolCodex:
		return map[string]string{agent.CodexBaseURLEnv: base + "/v1"}
	case protocol.ToolGemini:
		return map[string]string{"GOOGLE_GEMINI_BASE_URL": base}
	case protocol.ToolOpenCode:
		return map[string]string{agent.OpencodeBaseURLEnv: base + "/v1"}
	}
	return nil
}

// ownSignIn keeps a person's own subscription: under the gateway, an
// agent whose person signed in with her own account (Claude Code's OAuth
// credentials, or Codex's ChatGPT sign-in, in the agent's config
// directory) keeps using that sign-in. The key variable goes, so the CLI
// sends her credentials, and the token rides in the base URL's path
// (gateway.OwnPrefix): the gateway knows the task by it, passes her
// credentials through untouched and meters the request. The daemon never
// sees her credentials' file.
func ownSignIn(tool, token string, env []string) []string {
	if token == "" {
		return env
	}
	switch {
	case tool == protocol.ToolClaudeCode && claudeSignedIn(env):
		return rewriteEnv(env, "ANTHROPIC_BASE_URL", ownPrefix+token, nil, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
	case tool == protocol.ToolCodex && codexSignedIn(env):
		return rewriteEnv(env, agent.CodexBaseURLEnv, ownPrefix+token+"/chatgpt",
			[]string{agent.CodexSignInEnv + "=chatgpt"}, "OPENAI_API_KEY")
	}
	return env
}

// rewriteEnv drops the variables drop, points base (the relay's URL) at
// path below the relay's root, and adds add.
func rewriteEnv(env []string, base, path string, add []string, drop ...string) []string {
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(drop, k):
			continue
		case k == base:
			u, err := url.Parse(v)
			if err != nil {
				continue
			}
			u.Path = path
			kv = k + "=" + u.String()
		}
		out = append(out, kv)
	}
	return append(out, add...)
}

// ownPrefix is gateway.OwnPrefix (the executor does not import the
// daemon's packages).
const ownPrefix = "/own/"

// claudeSignedIn: Claude Code's OAuth credentials, as it stores them on
// Linux ($CLAUDE_CONFIG_DIR, else ~/.claude, /.credentials.json), hold
// an access token.
func claudeSignedIn(env []string) bool {
	dir := agent.Getenv(env, "CLAUDE_CONFIG_DIR")
	if home := agent.Getenv(env, "HOME"); dir == "" && home != "" {
		dir = filepath.Join(home, ".claude")
	}
	var c struct {
		OAuth struct {
			AccessToken string `json:"accessToken"`
		} `json:"claudeAiOauth"`
	}
	return dir != "" && readJSON(filepath.Join(dir, ".credentials.json"), &c) && c.OAuth.AccessToken != ""
}

// codexSignedIn: Codex's auth.json ($CODEX_HOME, else ~/.codex) holds a
// ChatGPT sign-in's tokens, and no API key of its own.
func codexSignedIn(env []string) bool {
	dir := agent.Getenv(env, "CODEX_HOME")
	if home := agent.Getenv(env, "HOME"); dir == "" && home != "" {
		dir = filepath.Join(home, ".codex")
	}
	var c struct {
		Key    *string `json:"OPENAI_API_KEY"`
		Tokens struct {
			AccessToken string `json:"access_token"`
		} `json:"tokens"`
	}
	return dir != "" && readJSON(filepath.Join(dir, "auth.json"), &c) && c.Tokens.AccessToken != "" && (c.Key == nil || *c.Key == "")
}

// readJSON decodes the file at path into v (at most 1 MiB of it).
func readJSON(path string, v any) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(v) == nil
}
