package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agor-sh/agor/internal/executor/childenv"
	"github.com/agor-sh/agor/internal/executor/egress"
)

// DefaultAgentsPath is where the packaged executor finds agent settings.
const DefaultAgentsPath = "/etc/agor/agents.yaml"

// Agent says how to run one agentic tool.
type Agent struct {
	// Binary is the CLI; a bare name is looked up on PATH.
	Binary string `yaml:"binary"`
	// Env is added to the agent's environment: base URLs, switches.
	// Never keys: those come from the daemon, just in time.
	Env map[string]string `yaml:"env"`
}

// Agents are the settings by agentic_tool name.
type Agents map[string]Agent

// defaultBinaries are each tool's CLI name as npm installs it.
var defaultBinaries = map[string]string{
	"claude-code": "claude",
	"codex":       "codex",
	"gemini":      "gemini",
	"opencode":    "opencode",
}

// LoadAgents reads path; a missing file means every default.
func LoadAgents(path string) (Agents, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Agents{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	var a Agents
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("agents %s: %w", path, err)
	}
	for name, ag := range a {
		if ag.Binary != "" && !filepath.IsAbs(ag.Binary) && filepath.Base(ag.Binary) != ag.Binary {
			return nil, fmt.Errorf("agents %s: %s.binary: %q must be absolute or a bare name", path, name, ag.Binary)
		}
		for k := range ag.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || childenv.Manager(k) {
				return nil, fmt.Errorf("agents %s: %s.env: %q cannot be set for an agent", path, name, k)
			}
		}
	}
	return a, nil
}

// command is the tool's binary and whole environment with key in it.
func (a Agents) command(tool, keyName, key, session string, more map[string]string) (string, []string) {
	ag := a[tool]
	bin := ag.Binary
	if bin == "" {
		bin = defaultBinaries[tool]
	}
	if !filepath.IsAbs(bin) {
		if p, err := exec.LookPath(bin); err == nil {
			bin = p
		}
	}
	extra := egress.SessionEnv(session) // nil without a proxy
	if extra == nil {
		extra = map[string]string{}
	}
	if key != "" {
		extra[keyName] = key
	}
	env := childenv.Configured(os.Environ(), extra, ag.Env)
	// more is the executor's own (the gateway's relay, in the adapters'
	// AGOR_*_BASE_URL): over agents.yaml's, and past the filter that keeps
	// AGOR_* out of what a request adds.
	for k, v := range more {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		env = append(env, k+"="+v)
	}
	return bin, env
}
