package api

import (
	"context"
	"fmt"
	"io"
	"slices"

	"maps"

	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// networkOf is user's mode and egress totals for the executor list.
func (s *Server) networkOf(ctx context.Context, user string) *apiwire.ExecutorNetwork {
	if s.NetworkMode == nil {
		return nil
	}
	user, _ = envdef.SplitKey(user) // her mode and egress, wherever her executor runs
	n := apiwire.ExecutorNetwork{Mode: s.NetworkMode(ctx, user)}
	if s.EgressTotals != nil {
		t := s.EgressTotals()[user]
		n.BytesUp, n.BytesDown, n.Allowed, n.Denied = t.BytesUp, t.BytesDown, t.Allowed, t.Denied
	}
	return &n
}

// writeEgressMetrics writes each person's egress series: an admin's to
// see, anyone else sees their own.
func (s *Server) writeEgressMetrics(w io.Writer, c who) {
	if s.EgressTotals == nil {
		return
	}
	totals := s.EgressTotals()
	users := slices.Sorted(maps.Keys(totals))
	users = slices.DeleteFunc(users, func(u string) bool { return !c.sees(u) })
	fmt.Fprintln(w, "# HELP agor_egress_bytes_total Bytes through the egress service, by person and direction (up: to destinations).\n# TYPE agor_egress_bytes_total counter")
	for _, u := range users {
		fmt.Fprintf(w, "agor_egress_bytes_total{user=%q,direction=\"up\"} %d\n", u, totals[u].BytesUp)
		fmt.Fprintf(w, "agor_egress_bytes_total{user=%q,direction=\"down\"} %d\n", u, totals[u].BytesDown)
	}
	fmt.Fprintln(w, "# HELP agor_egress_connections_total Connections and requests through the egress service, by person and decision.\n# TYPE agor_egress_connections_total counter")
	for _, u := range users {
		fmt.Fprintf(w, "agor_egress_connections_total{user=%q,decision=\"allowed\"} %d\n", u, totals[u].Allowed)
		fmt.Fprintf(w, "agor_egress_connections_total{user=%q,decision=\"denied\"} %d\n", u, totals[u].Denied)
	}
}
