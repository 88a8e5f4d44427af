package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// between accepts from min to max operands, named in names.
func between(lo, hi int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("want %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
}

// filesHelp says where paths lead, for the family and its commands.
const filesHelp = `PATH is relative to the executor's root (the user's home); a path that
leads outside it, through ".." or a symbolic link, is refused (path_escape).
A user reaches their own files; root and admins anyone's. Every write is in
the audit trail (file_written).`

func newFiles(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "files",
		Short: "list, read, write and watch files in a user's executor",
		Long: `List, read, write and watch files as USER, in their executor, through the
daemon: what a file browser or an editor needs, without a shell.

` + filesHelp + `

` + daemonHelp,
		Example: `  agorctl files ls alice src
  agorctl files cat alice notes.txt
  echo hello | agorctl files put alice notes.txt
  agorctl files watch alice src --recursive`,
	}
	group(c, nil)
	c.AddCommand(newFilesLs(a), newFilesCat(a), newFilesPut(a), newFilesWatch(a))
	return c
}

func newFilesLs(a *app) *cobra.Command {
	var f apiFlags
	var recursive, asJSON bool
	c := &cobra.Command{
		Use:   "ls USER [PATH]",
		Short: "list a directory of USER's",
		Long: `List PATH (default: the root) as a table of TYPE MODE SIZE MODIFIED PATH, or
the executor's JSON with --json.

` + filesHelp + `

` + daemonHelp,
		Example: `  agorctl files ls alice
  agorctl files ls alice src --recursive --json`,
		Args:              between(1, 2, "USER [PATH]"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			res, err := c.ListFiles(ctx, args[0], argOr(args, 1, "."), recursive)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "TYPE\tMODE\tSIZE\tMODIFIED\tPATH")
			for _, e := range res.Entries {
				fmt.Fprintf(tw, "%s\t%04o\t%d\t%s\t%s\n", e.Type, e.Mode, e.Size, time.UnixMilli(e.MtimeMS).Format("2006-01-02 15:04"), e.Path)
			}
			if res.Truncated {
				fmt.Fprintln(tw, "…\t\t\t\t(more: the listing was cut short)")
			}
			return tw.Flush()
		},
	}
	addAPIFlags(c, &f)
	c.Flags().BoolVarP(&recursive, "recursive", "r", false, "list beneath PATH too")
	c.Flags().BoolVar(&asJSON, "json", false, "print the executor's JSON")
	return c
}

func newFilesCat(a *app) *cobra.Command {
	var f apiFlags
	c := &cobra.Command{
		Use:   "cat USER PATH",
		Short: "print a file of USER's",
		Long: `Print USER's file PATH on standard output, streamed as the daemon reads it.
Files over the daemon's api.max_file_bytes are refused (file_too_large).

` + filesHelp + `

` + daemonHelp,
		Example:           `  agorctl files cat alice notes.txt > notes.txt`,
		Args:              exactly(2, "USER PATH"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			_, err := c.ReadFile(ctx, args[0], args[1], a.stdout)
			return err
		},
	}
	addAPIFlags(c, &f)
	longTimeout(c)
	return c
}

// longTimeout gives a file transfer an hour by default, not a call's minute.
func longTimeout(c *cobra.Command) {
	t := c.Flags().Lookup("timeout")
	_ = t.Value.Set("1h")
	t.DefValue = "1h0m0s"
}

func newFilesPut(a *app) *cobra.Command {
	var f apiFlags
	var mode string
	var asJSON bool
	c := &cobra.Command{
		Use:   "put USER PATH [FILE]",
		Short: "write a file of USER's",
		Long: `Write FILE (default: standard input) as USER's file PATH, atomically: the
executor writes beside it and renames at the end, so readers see the old or
the new file, never half of one. The directory must exist. The file is
USER's, with --mode, else the mode of the file it replaces, else 0644.

` + filesHelp + `

` + daemonHelp,
		Example: `  agorctl files put alice notes.txt ./notes.txt
  echo hello | agorctl files put alice hello.txt --mode 0600`,
		Args:              between(2, 3, "USER PATH [FILE]"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := a.stdin
			if len(args) == 3 && args[2] != "-" {
				file, err := os.Open(args[2])
				if err != nil {
					return err
				}
				defer file.Close()
				in = file
			}
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			res, err := c.WriteFile(ctx, args[0], args[1], mode, in)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			fmt.Fprintf(a.stdout, "wrote %s (%d bytes)\n", res.Path, res.Size)
			return nil
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&mode, "mode", "", "permission `bits` of the file, in octal (e.g. 0644)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON reply")
	longTimeout(c)
	return c
}

func newFilesWatch(a *app) *cobra.Command {
	var f apiFlags
	var recursive, asJSON bool
	c := &cobra.Command{
		Use:   "watch USER [PATH]",
		Short: "print changes to USER's files as they happen",
		Long: `Print each change beneath PATH (default: the root) as "OP PATH", or as JSON
lines with --json, until interrupted. The daemon reconnects a dropped stream;
"resync" means changes may have been missed (list again).

` + filesHelp + `

` + daemonHelp,
		Example: `  agorctl files watch alice src --recursive
  agorctl files watch alice --json`,
		Args:              between(1, 2, "USER [PATH]"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := apiclient.New(f.socket) // a watch runs until interrupted
			enc := json.NewEncoder(a.stdout)
			err := c.WatchFiles(cmd.Context(), args[0], argOr(args, 1, "."), recursive, func(name string, ev protocol.FileEvent) {
				switch {
				case asJSON && name == apiwire.WatchEventResync:
					_ = enc.Encode(map[string]string{"event": name})
				case asJSON:
					_ = enc.Encode(ev)
				case name == apiwire.WatchEventResync:
					fmt.Fprintln(a.stdout, "resync")
				default:
					fmt.Fprintf(a.stdout, "%s %s\n", ev.Op, ev.Path)
				}
			})
			return err // interrupted: exitCode makes it 130
		},
	}
	addAPIFlags(c, &f)
	c.Flags().Lookup("timeout").Usage = "unused: a watch runs until interrupted"
	c.Flags().BoolVarP(&recursive, "recursive", "r", false, "watch beneath PATH too")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a change")
	return c
}

func argOr(args []string, i int, def string) string {
	if len(args) > i {
		return args[i]
	}
	return def
}
