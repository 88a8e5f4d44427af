package api

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// usage reads what the running executors in list use, in one batch. It
// is best effort: the list is worth having without it.
func (s *Server) usage(ctx context.Context, list []executorunit.Status) map[string]*apiwire.ExecutorUsage {
	var running []string
	for _, st := range list {
		if st.Service == "active" {
			running = append(running, st.User)
		}
	}
	if len(running) == 0 {
		return nil
	}
	got, err := s.Backend.Usage(ctx, running)
	if err != nil {
		s.log().Warn("executor usage unavailable", "err", err)
		return nil
	}
	out := make(map[string]*apiwire.ExecutorUsage, len(got))
	for user, u := range got {
		out[user] = &apiwire.ExecutorUsage{MemoryBytes: u.MemoryBytes, CPUNSec: u.CPUNSec, Tasks: u.Tasks,
			IOReadBytes: u.IOReadBytes, IOWriteBytes: u.IOWriteBytes, Source: u.Source, Unavailable: u.Unavailable}
	}
	return out
}

// usageSeries are the Prometheus series of executor usage, labelled by
// user; a value the backend does not know is left out, not reported as 0.
var usageSeries = []struct {
	name, kind, help string
	value            func(*apiwire.ExecutorUsage) (string, bool)
}{
	{"agor_executor_cpu_seconds_total", "counter", "CPU time used by the user's executor and all it started, since its unit started.", func(u *apiwire.ExecutorUsage) (string, bool) {
		if u.CPUNSec == nil {
			return "", false
		}
		return strconv.FormatFloat(float64(*u.CPUNSec)/1e9, 'f', 9, 64), true
	}},
	{"agor_executor_memory_bytes", "gauge", "Memory charged to the user's executor now.", count(func(u *apiwire.ExecutorUsage) *uint64 { return u.MemoryBytes })},
	{"agor_executor_tasks", "gauge", "Tasks (threads) of the user's executor now.", count(func(u *apiwire.ExecutorUsage) *uint64 { return u.Tasks })},
	{"agor_executor_io_read_bytes_total", "counter", "Bytes the user's executor read from block devices.", count(func(u *apiwire.ExecutorUsage) *uint64 { return u.IOReadBytes })},
	{"agor_executor_io_write_bytes_total", "counter", "Bytes the user's executor wrote to block devices.", count(func(u *apiwire.ExecutorUsage) *uint64 { return u.IOWriteBytes })},
}

func count(field func(*apiwire.ExecutorUsage) *uint64) func(*apiwire.ExecutorUsage) (string, bool) {
	return func(u *apiwire.ExecutorUsage) (string, bool) {
		if v := field(u); v != nil {
			return strconv.FormatUint(*v, 10), true
		}
		return "", false
	}
}

// writeUsageMetrics writes the usage series of the running executors:
// every user's for an admin, only the caller's own for anyone else (as
// /v1/executors, which lists a person her own executor only, keeps one
// person's CPU, memory and IO from another).
func (s *Server) writeUsageMetrics(ctx context.Context, w io.Writer, c who) {
	list, err := s.Backend.List(ctx)
	if err != nil {
		s.log().Warn("executor usage metrics: list", "err", err)
		return
	}
	list = slices.DeleteFunc(list, func(st executorunit.Status) bool { return !c.sees(st.User) })
	usage := s.usage(ctx, list)
	for _, series := range usageSeries {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", series.name, series.help, series.name, series.kind)
		for _, st := range list {
			if u := usage[st.User]; u != nil {
				if v, ok := series.value(u); ok {
					fmt.Fprintf(w, "%s{user=%q} %s\n", series.name, st.User, v)
				}
			}
		}
	}
}
