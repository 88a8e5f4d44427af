package config

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agor-sh/agor/internal/account"
)

// Validate checks every value, naming the key of the first bad one.
func (c Config) Validate() error {
	if err := c.Execution.validate(); err != nil {
		return err
	}
	if err := c.API.validate(); err != nil {
		return err
	}
	if err := c.Sandbox.validate(); err != nil {
		return err
	}
	if err := c.Network.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.Slurm.validate(c.Execution.Backend); err != nil {
		return err
	}
	if err := c.Quotas.validate(); err != nil {
		return err
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if err := c.Store.validate(); err != nil {
		return err
	}
	if err := c.Agents.validate(); err != nil {
		return err
	}
	if err := c.Environments.validate(); err != nil {
		return err
	}
	if err := c.Gateway.validate(); err != nil {
		return err
	}
	return c.Daemon.validate()
}

func (e Execution) validate() error {
	checks := []struct {
		key string
		err string
	}{
		{"backend", oneOf(e.Backend, "systemd", "direct", "slurm")},
		{"max_executors", positive(int64(e.MaxExecutors))},
		{"idle_timeout_ms", positive(e.IdleTimeoutMS)},
		{"connection_timeout_ms", positive(e.ConnectionTimeoutMS)},
		{"session_token_expiration_ms", positive(e.SessionTokenExpirationMS)},
		{"session_token_max_uses", positive(int64(e.SessionTokenMaxUses))},
		{"min_uid", positive(int64(e.MinUID))},
		{"socket_path_template", socketTemplate(e.SocketPathTemplate)},
		{"executor_unix_user", executorUser(e)},
		{"allowed_users", userNames(e.AllowedUsers)},
		{"allowed_groups", userNames(e.AllowedGroups)},
	}
	for _, ch := range checks {
		if ch.err != "" {
			return fmt.Errorf("execution.%s: %s", ch.key, ch.err)
		}
	}
	return nil
}

func (a API) validate() error {
	if !filepath.IsAbs(a.SocketPath) {
		return fmt.Errorf("api.socket_path: %q is not an absolute path", a.SocketPath)
	}
	if addr := a.TCPAddress; addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("api.tcp_address: %q: %v", addr, err)
		}
		if (a.TLSCert == "") != (a.TLSKey == "") {
			return fmt.Errorf("api.tls_cert and api.tls_key: set both or neither")
		}
		if a.TLSCert == "" && !loopback(host) {
			return fmt.Errorf("api.tcp_address: %q is not a loopback address: set api.tls_cert and api.tls_key, so bearer tokens do not cross the network in clear", addr)
		}
	}
	if a.TokensFile != "" && !filepath.IsAbs(a.TokensFile) {
		return fmt.Errorf("api.tokens_file: %q is not an absolute path", a.TokensFile)
	}
	if a.MaxFileBytes <= 0 {
		return fmt.Errorf("api.max_file_bytes: must be positive")
	}
	if a.MaxWatchStreams <= 0 {
		return fmt.Errorf("api.max_watch_streams: must be positive")
	}
	if a.MaxConnsPerUID <= 0 {
		return fmt.Errorf("api.max_conns_per_uid: must be positive")
	}
	if a.AdminGroup != "" {
		if err := account.ValidName(a.AdminGroup); err != nil {
			return fmt.Errorf("api.admin_group: %v", err)
		}
	}
	return nil
}

func (s Sandbox) validate() error {
	levels := []string{"off", "workspace", "read-only"}
	for _, l := range s.Allowed {
		if !slices.Contains(levels, l) {
			return fmt.Errorf("sandbox.allowed: %q is not a level (off, workspace, read-only)", l)
		}
	}
	if !slices.Contains(levels, s.Default) {
		return fmt.Errorf("sandbox.default: %q is not a level (off, workspace, read-only)", s.Default)
	}
	if len(s.Allowed) > 0 && !slices.Contains(s.Allowed, s.Default) {
		return fmt.Errorf("sandbox.default: %q is not in sandbox.allowed %v", s.Default, s.Allowed)
	}
	if s.Prompts != "" && !slices.Contains(levels, s.Prompts) {
		return fmt.Errorf("sandbox.prompts: %q is not a level (off, workspace, read-only)", s.Prompts)
	}
	if s.Prompts != "" && len(s.Allowed) > 0 && !slices.Contains(s.Allowed, s.Prompts) {
		return fmt.Errorf("sandbox.prompts: %q is not in sandbox.allowed %v", s.Prompts, s.Allowed)
	}
	for _, p := range s.ExtraWritable {
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") {
			return fmt.Errorf("sandbox.extra_writable: %q is neither absolute nor beneath ~/", p)
		}
	}
	return nil
}

func (d Daemon) validate() error {
	checks := []struct {
		key string
		err string
	}{
		{"state_dir", absolute(d.StateDir)},
		{"permission_timeout_ms", positive(d.PermissionTimeoutMS)},
		{"executor_request_rate", positive(int64(d.ExecutorRequestRate * 1000))},
		{"executor_request_burst", positive(int64(d.ExecutorRequestBurst))},
	}
	for _, ch := range checks {
		if ch.err != "" {
			return fmt.Errorf("daemon.%s: %s", ch.key, ch.err)
		}
	}
	return nil
}

func absolute(p string) string {
	if !filepath.IsAbs(p) {
		return fmt.Sprintf("%q is not an absolute path", p)
	}
	return ""
}

func oneOf(v string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return ""
		}
	}
	return fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

func positive(n int64) string {
	if n <= 0 {
		return fmt.Sprintf("must be positive, got %d", n)
	}
	return ""
}

func socketTemplate(t string) string {
	switch {
	case !filepath.IsAbs(t):
		return fmt.Sprintf("%q is not an absolute path", t)
	case strings.Count(t, "{user}") != 1:
		return fmt.Sprintf("%q must contain {user} exactly once", t)
	case filepath.Clean(t) != t:
		return fmt.Sprintf("%q is not a clean path", t)
	}
	return ""
}

func executorUser(e Execution) string {
	if e.RunAsUnixUser {
		return ""
	}
	if e.ExecutorUnixUser == "" {
		return "required when run_as_unix_user is false"
	}
	if e.ExecutorUnixUser == "root" {
		return "must not be root"
	}
	return errString(account.ValidName(e.ExecutorUnixUser))
}

func userNames(names []string) string {
	for _, n := range names {
		if err := account.ValidName(n); err != nil {
			return err.Error()
		}
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// loopback reports whether host (from tcp_address) can only be reached
// from this machine: localhost, or an address in 127.0.0.0/8 or ::1.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
