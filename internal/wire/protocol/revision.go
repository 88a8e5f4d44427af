package protocol

// Revision is this build's protocol revision, carried in ping both ways
// (PingParams from the daemon, PingResult from the executor). Builds from
// before revisions were numbered carry none: revision 0. Each end uses a
// feature only when the other's revision has it too.
const Revision = RevisionInteractive

// RevisionResume is the first revision whose executor owns its tasks: it
// runs them on while no daemon is connected, and serves resume_task to
// the next one. An executor below it ends its tasks with the connection
// that started them, so a restarted daemon cannot take them over.
const RevisionResume = 1

// RevisionGateway is the first revision whose executor can point an
// agent at the daemon's model gateway (ExecutePromptParams.GatewayToken).
// An executor below it would ask for the key itself.
const RevisionGateway = 2

// RevisionDoor is the first revision whose executor keeps the model
// gateway's credential from the agent: ExecutePromptParams.GatewayToken
// names one task, and the executor's relay puts it on the connections of
// that task's processes only (the door line), refusing every other
// connection; the agent holds a placeholder. An executor below it would
// put the credential in the agent's environment, and its relay would
// send none: the daemon replaces it, as below RevisionGateway.
const RevisionDoor = 4

// PingParams is what the daemon says of itself on connecting.
type PingParams struct {
	// Protocol is the daemon's Revision (0 from daemons before it).
	Protocol int `json:"protocol,omitempty"`
}
