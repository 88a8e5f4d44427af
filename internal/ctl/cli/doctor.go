package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/ctl/doctor"
)

func newDoctor(a *app) *cobra.Command {
	var f apiFlags
	var cfgPath string
	var asJSON bool
	var user string
	c := &cobra.Command{
		Use:   "doctor",
		Short: "check the installation and say what to fix",
		Long: `Check the installation as an operator would: units present and verified,
agor-daemon active and answering, the system bus, the polkit rule present and
in effect (asked of polkit; as root), the agor account, socket directories,
configuration, master key, the executor's exposure score, the sandbox, the
resource limits in force, and with the slurm backend the Slurm commands, the
dial-back's certificate and listener, and a test job on a node. One
"ok|FAIL|warn NAME DETAIL" line each, a "fix:" line under each FAIL; --json
for a JSON array of {name, status, detail, fix}. Run it as root for all
checks.`,
		Example: `  sudo agorctl doctor
  agorctl doctor --json | jq '.[] | select(.status == "FAIL")'`,
		Annotations: map[string]string{"exit": `0 no check failed (warnings allowed); 1 a check failed; 2 usage error;
130 interrupted.`},
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			d := doctor.Host(cfgPath, f.socket).ForUser(user)
			return exitWith(doctor.Report(d.Run(ctx), asJSON, a.stdout))
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&cfgPath, "config", config.DefaultPath, "daemon configuration `file`")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, status, detail, fix}")
	c.Flags().StringVar(&user, "user", "", "the `account` whose unit names and test job the checks try (default: the first allowed user, else the first account at or above min_uid)")
	return c
}
