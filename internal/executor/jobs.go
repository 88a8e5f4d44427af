package executor

import (
	"context"

	"github.com/agor-sh/agor/internal/slurm"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// registerJobs serves the slurm backend's submissions: this executor runs
// as the user, so the sbatch it runs submits her job and the scancel ends
// only hers. The daemon names the options; the script is its own.
func registerJobs(srv *Server) {
	var cmds slurm.Commands
	srv.Mux().Register(protocol.MethodSubmitJob, rpc.Method(func(ctx context.Context, p protocol.SubmitJobParams) (protocol.SubmitJobResult, error) {
		id, err := cmds.Submit(ctx, p)
		if err != nil {
			return protocol.SubmitJobResult{}, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonSubmitFailed, "%v", err)
		}
		return protocol.SubmitJobResult{JobID: id}, nil
	}))
	srv.Mux().Register(protocol.MethodCancelJob, rpc.Method(func(ctx context.Context, p protocol.CancelJobParams) (protocol.CancelJobResult, error) {
		if err := cmds.Cancel(ctx, p.JobID, p.Signal); err != nil {
			return protocol.CancelJobResult{}, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonSubmitFailed, "%v", err)
		}
		return protocol.CancelJobResult{}, nil
	}))
}
