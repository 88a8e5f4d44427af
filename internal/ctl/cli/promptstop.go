package cli

import (
	"context"
	"fmt"
	"time"
)

// stopTask stops the prompt's task when agorctl is interrupted (Ctrl-C,
// SIGTERM). Had agorctl been killed instead, the daemon would stop it
// once nobody follows it (docs/operations.md); --detach keeps a task
// running without a client.
func (r *renderer) stopTask() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := r.c.StopTask(ctx, r.task); err != nil {
		fmt.Fprintf(r.errw, "\nagorctl prompt: stopping task %s: %v (agorctl tasks stop %s)\n", r.task, err, r.task)
		return
	}
	fmt.Fprintf(r.errw, "\nagorctl prompt: interrupted; task %s stopped\n", r.task)
}
