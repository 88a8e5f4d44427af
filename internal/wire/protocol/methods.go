package protocol

// Methods the executor serves (daemon → executor).
const (
	MethodPing     = "ping"
	MethodShutdown = "shutdown"

	MethodExecutePrompt = "execute_prompt"
	MethodStopTask      = "stop_task"
	// MethodResumeTask takes over a running task on a new connection
	// (the daemon restarted): what it missed, then its result.
	MethodResumeTask = "resume_task"

	MethodExec = "exec"

	MethodReadFile   = "read_file"
	MethodWriteFile  = "write_file"
	MethodWriteFiles = "write_files"
	MethodListFiles  = "list_files"
	MethodWatch      = "watch"
	MethodUnwatch    = "unwatch"

	MethodSpawnTerminal     = "spawn_terminal"
	MethodAttachTerminal    = "attach_terminal"
	MethodResizeTerminal    = "resize_terminal"
	MethodTerminateTerminal = "terminate_terminal"
	MethodListTerminals     = "list_terminals"
	MethodTerminalInput     = "terminal_input" // notification
	// MethodAttachTerminalRaw is only ever a connection's first request:
	// after its reply the connection carries the terminal's bytes.
	MethodAttachTerminalRaw = "attach_terminal_raw"

	MethodSocketHolders = "socket_holders"
)

// Methods the daemon serves (executor → daemon).
const (
	MethodGetAPIKey         = "get_api_key"
	MethodRequestPermission = "request_permission"
	MethodReportMessage     = "report_message" // notification
)

// Notifications the executor sends on the connection a request came on.
const (
	MethodExecOutput     = "exec_output"
	MethodFileEvent      = "file_event"
	MethodTerminalOutput = "terminal_output"
	MethodTerminalExit   = "terminal_exit"
)

// ExecutorMethods lists what the executor serves, in catalog order.
var ExecutorMethods = []string{
	MethodPing, MethodShutdown,
	MethodExecutePrompt, MethodStopTask, MethodResumeTask,
	MethodExec,
	MethodReadFile, MethodWriteFile, MethodWriteFiles, MethodListFiles, MethodWatch, MethodUnwatch,
	MethodSpawnTerminal, MethodAttachTerminal, MethodResizeTerminal, MethodTerminateTerminal,
	MethodListTerminals, MethodTerminalInput, MethodAttachTerminalRaw,
	MethodSubmitJob, MethodCancelJob,
	MethodReleaseWarmAgent, MethodPrewarmAgent,
	MethodSocketHolders,
	MethodTaskNotice,
}

// DaemonMethods lists what the daemon serves on an executor connection.
// (MethodHello only on the dial-back listener, as a connection's first line.)
var DaemonMethods = []string{MethodGetAPIKey, MethodRequestPermission, MethodReportMessage, MethodHello, MethodWarmAgents,
	MethodGatewayRefused}

// StreamNotifications lists what the executor streams back to a caller.
var StreamNotifications = []string{MethodExecOutput, MethodFileEvent, MethodTerminalOutput, MethodTerminalExit}
