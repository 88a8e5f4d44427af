package api

import (
	"encoding/json"

	"github.com/agor-sh/agor/internal/sandbox"
)

// confinedFloor is level raised to the strictest one session's earlier
// tasks ran confined at: a session that ran confined goes on at least as
// confined, whatever a follow-up asks. Its agent's state was kept apart
// while confined (the executor's view of it), and an unconfined turn
// would run what a confined one left there. The executor remembers this
// too, but only while it runs; the store outlives it.
func (s *Server) confinedFloor(session, level string) string {
	tasks, err := s.Store.ListTasks(session, 0, "")
	if err != nil {
		return level
	}
	floor := sandbox.Level(level)
	for _, t := range tasks {
		var r struct {
			Sandbox *struct {
				Level string `json:"level"`
			} `json:"sandbox"`
		}
		if len(t.Result) == 0 || json.Unmarshal(t.Result, &r) != nil || r.Sandbox == nil {
			continue
		}
		if l, err := sandbox.ParseLevel(r.Sandbox.Level); err == nil {
			floor = sandbox.Stricter(floor, l)
		}
	}
	return string(floor)
}
