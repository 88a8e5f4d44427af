// Package flagenv lets every command-line flag also be set from the
// environment (PREFIX_FLAG_NAME), so a unit drop-in or EnvironmentFile=
// can tune a service without rewriting ExecStart. The command line wins.
package flagenv

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Name is the environment variable for a flag: prefix + "_" + the flag
// name upper-cased with '-' as '_'.
func Name(prefix, flagName string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Apply sets each flag of fs whose variable is present in the environment.
// Call it before fs.Parse. A bad value is an error naming the variable.
func Apply(fs *flag.FlagSet, prefix string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := Name(prefix, f.Name)
		v, ok := os.LookupEnv(name)
		if !ok || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("environment %s=%q: %w", name, v, serr)
		}
	})
	return err
}
