package doctor

import "context"

// checkSharedAccount says what run_as_unix_user: false costs: the kernel
// cannot keep people apart in one account, so exec, files and terminals
// are off for persons unless shared_account_access turns them on, and
// then each person can read the others' transcripts and keys.
func checkSharedAccount(_ context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	e := d.cfg.Execution
	switch {
	case e.RunAsUnixUser:
		return ok("each person's work runs as their own account")
	case e.SharedAccountAccess:
		return warn("shared account: every person's work runs as %s, and shared_account_access: true lets each of them "+
			"read the others' transcripts and API keys through exec, files and terminals", e.ExecutorUnixUser)
	}
	return warn("shared account: every person's work runs as %s and the kernel cannot keep them apart; exec, files and "+
		"terminals are off for persons (shared_account_access: false)", e.ExecutorUnixUser)
}
