package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agor-sh/agor/internal/version"
)

// newMan is the hidden "agorctl man": agorctl(1) from the command
// definitions, so that the page cannot drift from the flags (make man).
func newMan(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "man",
		Short:  "print agorctl(1) in roff, made from the command definitions",
		Long:   "Print the agorctl(1) manual page in roff, made from the same definitions as the commands, flags and help (make man installs it). The date is $SOURCE_DATE_EPOCH's, if set.",
		Hidden: true,
		Args:   noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeMan(a.stdout, cmd.Root(), version.Version, manDate())
		},
	}
}

// manDate is $SOURCE_DATE_EPOCH's day (reproducible builds), else none.
func manDate() string {
	var sec int64
	if _, err := fmt.Sscan(os.Getenv("SOURCE_DATE_EPOCH"), &sec); err != nil {
		return ""
	}
	return time.Unix(sec, 0).UTC().Format(time.DateOnly)
}

// writeMan writes agorctl(1): NAME, SYNOPSIS, DESCRIPTION, then every
// visible command with its help, flags and examples, EXIT STATUS,
// ENVIRONMENT, FILES, EXAMPLES and SEE ALSO.
func writeMan(w io.Writer, root *cobra.Command, ver, date string) error {
	m := &manWriter{w: w}
	m.printf(".TH AGORCTL 1 %q %q \"User Commands\"\n", date, "agor "+ver)
	m.printf(".SH NAME\nagorctl \\- %s\n", roff(root.Short))
	m.printf(".SH SYNOPSIS\n")
	for i, c := range visible(root) {
		if i > 0 {
			m.printf(".br\n")
		}
		m.printf(".B %s\n%s\n", roff(c.CommandPath()), synopsisArgs(c))
	}
	m.printf(".SH DESCRIPTION\n")
	m.text(root.Long + "\n\nCommands that go through the daemon use its API socket (--api, default " +
		"/run/agor/daemon.sock, environment AGOR_SOCKET). The daemon knows you by your Unix account: you act " +
		"as yourself; root and members of api.admin_group act for anyone.")
	m.printf(".SH COMMANDS\n")
	for _, c := range visible(root) {
		m.command(c)
	}
	m.printf(".SH EXIT STATUS\n")
	m.text(exitStatusHelp + "\n\nexec and terminal exit with the remote program's own status (128+N when signal N ended it); prompt exits 124 when the agent's --limit ran out and 130 when its task was cancelled; doctor exits 1 when a check failed.")
	m.printf(".SH ENVIRONMENT\n.TP\n.B AGOR_SOCKET\nThe daemon's API socket, when --api is not given (default /run/agor/daemon.sock).\n")
	m.printf(".SH FILES\n.TP\n.I /run/agor/daemon.sock\nagor\\-daemon's API socket.\n.TP\n.I /run/agor/executors/USER.sock\nEach user's executor socket.\n.TP\n.I /etc/agor/config.yaml\nThe daemon's configuration (doctor, executors ensure, api\\-token).\n.TP\n.I ~/.local/state/agor/disabled.jsonl\nWhat the executor disabled after your confined work (disabled list, restore).\n")
	m.printf(".SH EXAMPLES\n")
	m.example(root.Example)
	m.printf(".SH SEE ALSO\n.BR agor-daemon (8),\n.BR agor-executor (8),\n.BR systemctl (1),\n.BR journalctl (1)\n")
	return m.err
}

// visible is every command below root that help shows, depth first.
func visible(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		if c.Runnable() && c.Annotations["family"] == "" {
			out = append(out, c)
		}
		out = append(out, visible(c)...)
	}
	return out
}

// synopsisArgs is the operands part of c's usage line, [FLAGS] first.
func synopsisArgs(c *cobra.Command) string {
	_, operands, _ := strings.Cut(c.Use, " ")
	s := "[\\fIflags\\fR]"
	if operands != "" {
		s += " " + roffArgs(operands)
	}
	return s
}

type manWriter struct {
	w   io.Writer
	err error
}

func (m *manWriter) printf(format string, a ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, a...)
	}
}

// text writes paragraphs separated by blank lines.
func (m *manWriter) text(s string) {
	for i, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if i > 0 {
			m.printf(".PP\n")
		}
		m.printf("%s\n", roff(p))
	}
}

func (m *manWriter) command(c *cobra.Command) {
	m.printf(".SS \"%s\"\n", roff(c.CommandPath()+" "+usageArgs(c)))
	m.text(strings.Replace(c.Long, "\n\n"+daemonHelp, "", 1)) // said once, in DESCRIPTION
	if c.HasAvailableLocalFlags() {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			name, usage := pflag.UnquoteUsage(f)
			m.printf(".TP\n\\fB\\-\\-%s\\fR", roff(f.Name))
			if name != "" {
				m.printf(" \\fI%s\\fR", roff(name))
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			m.printf("\n%s\n", roff(usage))
		})
	}
	if s, ok := c.Annotations["exit"]; ok {
		m.printf(".PP\nExit status: %s\n", roff(s))
	}
	if c.Example != "" {
		m.printf(".PP\nExamples:\n")
		m.example(c.Example)
	}
}

func usageArgs(c *cobra.Command) string {
	_, operands, _ := strings.Cut(c.Use, " ")
	return strings.TrimSpace("[flags] " + operands)
}

func (m *manWriter) example(s string) {
	m.printf(".PP\n.RS 4\n.nf\n")
	for _, l := range strings.Split(s, "\n") {
		m.printf("%s\n", roff(strings.TrimSpace(l)))
	}
	m.printf(".fi\n.RE\n")
}

// roff escapes text for roff: backslashes, minus signs, and a line
// that would start with a control character.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// roffArgs sets operands in italics, keeping brackets, bars and "--".
func roffArgs(s string) string {
	var b strings.Builder
	for i, w := range strings.Fields(s) {
		if i > 0 {
			b.WriteByte(' ')
		}
		core := strings.Trim(w, "[].")
		if core == "" || strings.HasPrefix(core, "-") {
			b.WriteString(roff(w))
			continue
		}
		pre, post, _ := strings.Cut(w, core)
		fmt.Fprintf(&b, "%s\\fI%s\\fR%s", pre, roff(core), post)
	}
	return b.String()
}
