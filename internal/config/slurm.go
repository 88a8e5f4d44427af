package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/agor-sh/agor/internal/account"
)

// Slurm is the slurm backend (execution.backend: slurm): each person's
// executor is a Slurm job of theirs, submitted by their own executor on
// this (login) host, that dials back to the daemon's TLS listener.
type Slurm struct {
	// Listen is the dial-back listener's address (host:port) on this
	// host; Advertise what the jobs dial ("" : Listen).
	Listen    string `yaml:"listen"`
	Advertise string `yaml:"advertise"`
	// TLSCert and TLSKey (PEM) are the listener's certificate and key;
	// CAFile the CA that signed it, at this path on every node: the
	// executors trust it and nothing else. ServerName is the name they
	// check in the certificate ("" : Advertise's host).
	TLSCert    string `yaml:"tls_cert"`
	TLSKey     string `yaml:"tls_key"`
	CAFile     string `yaml:"ca_file"`
	ServerName string `yaml:"server_name"`
	// ExecutorPath is agor-executor on the compute nodes.
	ExecutorPath string `yaml:"executor_path"`
	JobName      string `yaml:"job_name"`         // squeue --name finds every user's executor jobs by it
	PollMS       int64  `yaml:"poll_interval_ms"` // one squeue for all users each interval
	// TimeLimitNoticeS: the job is told (SIGUSR1) this long before its
	// time limit, stops taking work and ends; the session resumes in a
	// new job.
	TimeLimitNoticeS int64 `yaml:"time_limit_notice_s"`
	// ReconnectS: how long a job's executor keeps dialling while the
	// daemon is away (a restart) before it ends.
	ReconnectS int64  `yaml:"reconnect_s"`
	Output     string `yaml:"output"` // the job's --output on the node ("" : /dev/null)
	// Job is every job's settings; Groups override them for their members
	// (in file order), Users for one person, each key of a later one
	// replacing the earlier.
	Job    JobSettings            `yaml:"job"`
	Groups []GroupJobSettings     `yaml:"groups"`
	Users  map[string]JobSettings `yaml:"users"`
}

// JobSettings are sbatch's options for an executor's job; "" or 0 leaves
// the option to the level below (and, at the bottom, to Slurm).
type JobSettings struct {
	Partition string `yaml:"partition"`
	TimeLimit string `yaml:"time_limit"` // sbatch --time: "8:00:00", "1-00:00:00"
	Memory    string `yaml:"memory"`     // sbatch --mem: "4G"
	CPUs      int    `yaml:"cpus"`       // --cpus-per-task
}

// GroupJobSettings overrides JobSettings for the members of Group.
type GroupJobSettings struct {
	Group       string `yaml:"group"`
	JobSettings `yaml:",inline"`
}

// Over returns s with o's set keys replacing its own.
func (s JobSettings) Over(o JobSettings) JobSettings {
	if o.Partition != "" {
		s.Partition = o.Partition
	}
	if o.TimeLimit != "" {
		s.TimeLimit = o.TimeLimit
	}
	if o.Memory != "" {
		s.Memory = o.Memory
	}
	if o.CPUs != 0 {
		s.CPUs = o.CPUs
	}
	return s
}

// DefaultSlurm is the section's defaults.
func DefaultSlurm() Slurm {
	return Slurm{CAFile: "/etc/agor/dialback-ca.pem", ExecutorPath: "/usr/libexec/agor/agor-executor",
		JobName: "agor-executor", PollMS: 2000, TimeLimitNoticeS: 300, ReconnectS: 300}
}

// AdvertiseAddr is what the jobs dial.
func (s Slurm) AdvertiseAddr() string {
	if s.Advertise != "" {
		return s.Advertise
	}
	return s.Listen
}

// validate checks the section; with the slurm backend the listener and
// its certificate are required.
func (s Slurm) validate(backend string) error {
	if backend != "slurm" {
		return nil
	}
	for _, f := range []struct{ key, v string }{{"listen", s.Listen}, {"tls_cert", s.TLSCert}, {"tls_key", s.TLSKey}} {
		if f.v == "" {
			return fmt.Errorf("slurm.%s: required with execution.backend slurm", f.key)
		}
	}
	for _, f := range []struct{ key, v string }{{"listen", s.Listen}, {"advertise", s.Advertise}} {
		if f.v == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(f.v); err != nil {
			return fmt.Errorf("slurm.%s: %q: %v", f.key, f.v, err)
		}
	}
	for _, f := range []struct{ key, v string }{{"tls_cert", s.TLSCert}, {"tls_key", s.TLSKey}, {"ca_file", s.CAFile}, {"executor_path", s.ExecutorPath}} {
		if !filepath.IsAbs(f.v) || strings.ContainsAny(f.v, "'\n") {
			return fmt.Errorf("slurm.%s: %q is not an absolute path (without quotes or newlines)", f.key, f.v)
		}
	}
	if s.PollMS <= 0 || s.ReconnectS <= 0 || s.TimeLimitNoticeS < 0 {
		return fmt.Errorf("slurm.poll_interval_ms, reconnect_s: must be positive; time_limit_notice_s: not negative")
	}
	if err := oneWord("slurm.job_name", s.JobName, true); err != nil {
		return err
	}
	if err := oneWord("slurm.output", s.Output, false); err != nil {
		return err
	}
	if err := s.Job.validate("slurm.job"); err != nil {
		return err
	}
	for i, g := range s.Groups {
		if err := account.ValidName(g.Group); err != nil {
			return fmt.Errorf("slurm.groups[%d].group: %v", i, err)
		}
		if err := g.JobSettings.validate(fmt.Sprintf("slurm.groups[%d]", i)); err != nil {
			return err
		}
	}
	for name, u := range s.Users {
		if err := account.ValidName(name); err != nil {
			return fmt.Errorf("slurm.users: %q: %v", name, err)
		}
		if err := u.validate("slurm.users." + name); err != nil {
			return err
		}
	}
	return nil
}

func (j JobSettings) validate(key string) error {
	for _, f := range []struct{ key, v string }{{"partition", j.Partition}, {"time_limit", j.TimeLimit}, {"memory", j.Memory}} {
		if err := oneWord(key+"."+f.key, f.v, false); err != nil {
			return err
		}
	}
	if j.CPUs < 0 {
		return fmt.Errorf("%s.cpus: must not be negative", key)
	}
	return nil
}

// oneWord: an sbatch option's value is one word, so it cannot carry
// another option.
func oneWord(key, v string, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%s: required", key)
	case strings.ContainsAny(v, " \t\r\n\x00'\"") || len(v) > 256:
		return fmt.Errorf("%s: %q must be one word (no spaces or quotes) of at most 256 bytes", key, v)
	}
	return nil
}
