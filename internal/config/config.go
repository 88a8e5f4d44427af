// Package config reads agor-daemon's configuration file,
// /etc/agor/config.yaml, and the drop-ins in /etc/agor/config.d
// (dropin.go). Key names in the execution section follow the
// system agor replaces, so existing files carry over.
package config

import (
	"errors"
	"io"
	"strings"
)

// DefaultPath is where the packaged daemon reads its configuration.
const DefaultPath = "/etc/agor/config.yaml"

// Config is the whole file.
type Config struct {
	Execution Execution `yaml:"execution"`
	Sandbox   Sandbox   `yaml:"sandbox"`
	API       API       `yaml:"api"`
	Daemon    Daemon    `yaml:"daemon"`
	Limits    Limits    `yaml:"limits"`    // executors' resource limits (limits.go)
	Slurm     Slurm     `yaml:"slurm"`     // the slurm backend (slurm.go)
	Quotas    Quotas    `yaml:"quotas"`    // quotas.go
	Retention Retention `yaml:"retention"` // quotas.go
	Store     Store     `yaml:"store"`     // the store's filesystem (quotas.go)
	Agents    Agents    `yaml:"agents"`    // warm agents, read by the executor (agents.go)
	Network   Network   `yaml:"network"`   // each person's network egress (network.go)
	Gateway   Gateway   `yaml:"gateway"`   // the model gateway's prices and budgets (gateway.go)
	// Environments: the default one and where definitions are (environments.go).
	Environments Environments `yaml:"environments"`
}

// Daemon is what the daemon keeps and how it guards itself against its
// executors.
type Daemon struct {
	StateDir             string  `yaml:"state_dir"`              // credentials/, audit.jsonl, agor.db
	PermissionTimeoutMS  int64   `yaml:"permission_timeout_ms"`  // no decision in time: deny
	ExecutorRequestRate  float64 `yaml:"executor_request_rate"`  // get_api_key and request_permission per second, per executor
	ExecutorRequestBurst int     `yaml:"executor_request_burst"` // allowed above the rate at once
}

// API is the daemon's client socket.
type API struct {
	SocketPath string `yaml:"socket_path"` // used when the socket is not activated
	AdminGroup string `yaml:"admin_group"` // members may act for any user; root always may
	// TCPAddress, when set, also serves the API on TCP, where callers
	// authenticate with a bearer token from TokensFile (off by default).
	TCPAddress string `yaml:"tcp_address"`
	TokensFile string `yaml:"tokens_file"` // lines "USER UID SHA256-HEX"; agorctl api-token new writes it
	// TLSCert and TLSKey (PEM files) make the TCP API HTTPS; required
	// when TCPAddress is not a loopback address, so that bearer tokens
	// never cross a network in clear.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// MaxFileBytes bounds one file read or written through the API;
	// MaxWatchStreams the file watch streams one person holds open.
	MaxFileBytes    int64 `yaml:"max_file_bytes"`
	MaxWatchStreams int   `yaml:"max_watch_streams"`
	// MaxConnsPerUID bounds one local user's open connections to the API
	// socket (root is not counted).
	MaxConnsPerUID int `yaml:"max_conns_per_uid"`
}

// Sandbox is the Landlock confinement of agents, commands and terminals:
// the level a request gets when it names none, the levels it may name,
// whether a kernel without Landlock refuses confined work (required) or
// runs it unconfined with a warning, paths writable at every level but
// off ("~/..." is beneath the user's home), and whether confined
// processes may open Unix sockets (off: they could ask a server outside
// the sandbox to act for them).
type Sandbox struct {
	Default string `yaml:"default"`
	// Prompts is the level an agent's prompt gets when it names none
	// ("": Default). Commands and terminals, the person's own work, get
	// Default.
	Prompts       string   `yaml:"prompts"`
	Allowed       []string `yaml:"allowed"`
	Required      bool     `yaml:"required"`
	ExtraWritable []string `yaml:"extra_writable"`
	UnixSockets   bool     `yaml:"unix_sockets"`
}

// Execution is how and where user work runs. Every default is in Default.
type Execution struct {
	Backend                  string   `yaml:"backend"`                     // systemd, direct or slurm
	RunAsUnixUser            bool     `yaml:"run_as_unix_user"`            // run work as the session's own user
	ExecutorUnixUser         string   `yaml:"executor_unix_user"`          // the one user when run_as_unix_user is false
	SharedAccountAccess      bool     `yaml:"shared_account_access"`       // run_as_unix_user false: exec, files, terminals for persons (off: all are one account)
	UseExecutor              bool     `yaml:"use_executor"`                // false: the daemon refuses work
	MaxExecutors             int      `yaml:"max_executors"`               // live executors at once
	IdleTimeoutMS            int64    `yaml:"idle_timeout_ms"`             // executor idle exit
	SocketPathTemplate       string   `yaml:"socket_path_template"`        // {user} is replaced
	ConnectionTimeoutMS      int64    `yaml:"connection_timeout_ms"`       // start + connect + first ping
	SessionTokenExpirationMS int64    `yaml:"session_token_expiration_ms"` // token lifetime
	SessionTokenMaxUses      int      `yaml:"session_token_max_uses"`      // uses per token
	AllowedUsers             []string `yaml:"allowed_users"`               // empty and no groups: any user >= min_uid
	AllowedGroups            []string `yaml:"allowed_groups"`
	MinUID                   int      `yaml:"min_uid"` // below it: system accounts, refused
}

// Default is the configuration used for every key the file leaves out.
func Default() Config {
	return Config{Execution: Execution{
		Backend:                  "systemd",
		RunAsUnixUser:            true,
		UseExecutor:              true,
		MaxExecutors:             100,
		IdleTimeoutMS:            60_000,
		SocketPathTemplate:       "/run/agor/executors/{user}.sock",
		ConnectionTimeoutMS:      10_000,
		SessionTokenExpirationMS: 24 * 60 * 60 * 1000,
		SessionTokenMaxUses:      10_000,
		MinUID:                   1000,
	}, API: API{SocketPath: "/run/agor/daemon.sock", AdminGroup: "agor-admins", TokensFile: "/etc/agor/api-tokens",
		MaxFileBytes: 1 << 30, MaxWatchStreams: 8, MaxConnsPerUID: 64},
		// Required: on a kernel (or unit) without Landlock, confinement
		// asked for is refused rather than silently not given.
		Sandbox: Sandbox{Default: "off", Allowed: []string{"off", "workspace", "read-only"}, Required: true},
		Daemon:  Daemon{StateDir: "/var/lib/agor", PermissionTimeoutMS: 60_000, ExecutorRequestRate: 50, ExecutorRequestBurst: 100},
		Slurm:   DefaultSlurm(),
		Quotas:  DefaultQuotas(), Retention: DefaultRetention(), Store: DefaultStore(),
		Agents: DefaultAgents(), Network: DefaultNetwork(), Gateway: DefaultGateway(),
		Environments: DefaultEnvironments()}
}

// MaxFileSize bounds what Load reads: a configuration is small.
const MaxFileSize = 1 << 20

// Parse decodes one file's contents over the defaults and validates them.
// Unknown keys are errors (a typo must not silently mean the default).
func Parse(r io.Reader) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return Config{}, err
	}
	n, err := checkNode(data)
	if err != nil {
		return Config{}, err
	}
	c := Default()
	if n != nil {
		if err := n.Decode(&c); err != nil {
			return Config{}, clean(err)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// clean turns yaml's "field x not found in type config.Execution" into
// words about keys.
func clean(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	if i := strings.Index(msg, " not found in type "); i >= 0 {
		msg = strings.Replace(msg[:i], "field ", "unknown key ", 1)
	}
	return errors.New(msg)
}
