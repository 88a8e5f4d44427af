package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// printExecutors prints the daemon's executor list as a table, and once
// on stderr why any "-" is there.
func printExecutors(a *app, list apiwire.ExecutorList) {
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	jobs := slices.ContainsFunc(list.Executors, func(e apiwire.ExecutorInfo) bool { return e.JobID != "" })
	network := slices.ContainsFunc(list.Executors, func(e apiwire.ExecutorInfo) bool { return e.Network != nil })
	header := "USER\tSOCKET\tSERVICE\tCONNECTED\tCPU\tMEM\tTASKS"
	if network { // a daemon that says each person's network mode and egress
		header += "\tNET\tEGRESS"
	}
	if jobs { // the slurm backend: where each executor's job is
		header += "\tJOB\tNODE\tSTATE"
	}
	fmt.Fprintln(tw, header)
	var notes []string
	for _, e := range list.Executors {
		cpu, mem, tasks := "-", "-", "-"
		if u := e.Usage; u != nil {
			cpu, mem, tasks = seconds(u.CPUNSec), bytesIEC(u.MemoryBytes), number(u.Tasks)
			for _, n := range u.Unavailable {
				if shown(n) && !slices.Contains(notes, n) {
					notes = append(notes, n)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s", e.User, e.Socket, e.Service, e.Connected, cpu, mem, tasks)
		if network {
			net, egress := "-", "-"
			if n := e.Network; n != nil {
				net, egress = n.Mode, egressBytes(n)
			}
			fmt.Fprintf(tw, "\t%s\t%s", net, egress)
		}
		if jobs {
			fmt.Fprintf(tw, "\t%s\t%s\t%s", e.JobID, or(e.Node, "-"), e.JobState)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(a.stderr, "note: %s\n", n)
	}
}

// shown reports whether an Unavailable note is about a column of the table.
func shown(note string) bool {
	for _, p := range []string{"cpu:", "memory:", "tasks:"} {
		if strings.HasPrefix(note, p) {
			return true
		}
	}
	return false
}

func seconds(ns *uint64) string {
	if ns == nil {
		return "-"
	}
	return strconv.FormatFloat(float64(*ns)/1e9, 'f', 2, 64) + "s"
}

func number(n *uint64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatUint(*n, 10)
}

// bytesIEC is n as systemctl status shows memory: 1.5M, 2G.
func bytesIEC(n *uint64) string {
	if n == nil {
		return "-"
	}
	v, units := float64(*n), "BKMGTPE"
	i := 0
	for ; v >= 1024 && i < len(units)-1; i++ {
		v /= 1024
	}
	if i == 0 {
		return strconv.FormatUint(*n, 10) + "B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i:i+1]
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// egressBytes is what a person's connections moved, up/down, as "1.2K/3.4M".
func egressBytes(n *apiwire.ExecutorNetwork) string {
	if n.Allowed == 0 && n.Denied == 0 {
		return "-"
	}
	up, down := uint64(max(n.BytesUp, 0)), uint64(max(n.BytesDown, 0))
	return bytesIEC(&up) + "/" + bytesIEC(&down)
}
