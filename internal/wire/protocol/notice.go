package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// MethodTaskNotice (daemon → executor, revision 2) has a running task
// emit a notice event: something the daemon tells the person during the
// turn, in the turn's own numbered stream (a budget nearly spent).
const MethodTaskNotice = "task_notice"

// EventNotice is the event a task_notice becomes: {code, message}.
const EventNotice = "notice"

// Notice codes.
const (
	NoticeBudget = "budget" // the person's model budget is 80 % spent
)

// TaskNoticeParams is what to tell the task's person.
type TaskNoticeParams struct {
	TaskID  string `json:"task_id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Validate checks the fields.
func (p TaskNoticeParams) Validate() error {
	switch {
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.Code == "":
		return rpc.InvalidParams("code", "required")
	case p.Message == "" || len(p.Message) > 4096:
		return rpc.InvalidParams("message", "1 to 4096 bytes")
	}
	return nil
}

// TaskNoticeResult says whether the task was running to emit it.
type TaskNoticeResult struct {
	Emitted bool `json:"emitted"`
}
