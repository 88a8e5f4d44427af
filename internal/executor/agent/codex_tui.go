package agent

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

var _ TUI = Codex{}

// Screen is `codex [resume ID] -c ... [-m M] [PROMPT]`: the provider the headless adapter defines (the gateway's
// relay), the same config.toml, and the working directory trusted, so
// that no first-run screen asks.
func (c Codex) Screen(req Request) (Screen, error) {
	policy, sandbox, err := codexMode(req.PermissionMode)
	if err != nil {
		return Screen{}, err
	}
	if policy == "untrusted" { // the UI refuses it: "no longer supported"
		policy = "on-request"
	}
	if err := codexConfigure(req.Env, c.CredentialKey()); err != nil {
		return Screen{}, fmt.Errorf("codex: %w", err)
	}
	s := Screen{Argv: []string{req.Binary}, Env: screenEnv(req.Env), Session: req.Resume, Started: time.Now()}
	if req.Resume != "" {
		s.Argv = append(s.Argv, "resume", req.Resume)
	}
	args := codexArgs(req.Env, c.CredentialKey())
	s.Argv = append(s.Argv, args[:len(args)-1]...) // not app-server
	s.Argv = append(s.Argv, "-c", "projects."+strconv.Quote(req.Cwd)+`.trust_level="trusted"`,
		"-c", "check_for_update_on_startup=false",
		"-c", "approval_policy="+strconv.Quote(policy), "-c", "sandbox_mode="+strconv.Quote(sandbox))
	if req.Model != "" {
		s.Argv = append(s.Argv, "-m", req.Model)
	}
	if req.Prompt != "" {
		s.Argv = append(s.Argv, "--", req.Prompt)
	}
	return s, nil
}

// ScreenSession is the session of the newest rollout the UI wrote
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl), the resumed
// one when it wrote none.
func (Codex) ScreenSession(req Request, s Screen) string {
	newest, id := time.Time{}, ""
	root := filepath.Join(codexHome(s.Env), "sessions")
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a directory it cannot read has no rollout of this run
		}
		if name := d.Name(); !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.ModTime().Before(s.Started) || !fi.ModTime().After(newest) {
			return nil
		}
		if stem := strings.TrimSuffix(d.Name(), ".jsonl"); len(stem) > 36 {
			newest, id = fi.ModTime(), stem[len(stem)-36:]
		}
		return nil
	})
	if id == "" {
		return req.Resume
	}
	return id
}
