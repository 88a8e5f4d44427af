package config

import (
	"fmt"

	"github.com/agor-sh/agor/internal/envdef"
)

// Environments are where people's work may run besides the host; each is
// defined by `agorctl environments add` (internal/envdef).
type Environments struct {
	// Default is the environment of a session, command or terminal that
	// names none ("": the host). People it does not list are refused
	// such requests until they name "host".
	Default string `yaml:"default"`
	// Dir holds the definitions (default /etc/agor/environments). The
	// executors read them from the same path inside their roots.
	Dir string `yaml:"dir"`
}

// DefaultEnvironments is the section's default: none, definitions in
// envdef.DefaultDir.
func DefaultEnvironments() Environments { return Environments{Dir: envdef.DefaultDir} }

func (e Environments) validate() error {
	if e.Default != "" && e.Default != envdef.Host {
		if err := envdef.ValidName(e.Default); err != nil {
			return fmt.Errorf("environments.default: %w", err)
		}
	}
	if e.Dir == "" {
		return fmt.Errorf("environments.dir: empty")
	}
	return nil
}
