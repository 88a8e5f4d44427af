package daemon

import (
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// TestUseExecutorFalseRefused: the seed key that would run agents in the
// daemon is refused at start, saying why.
func TestUseExecutorFalseRefused(t *testing.T) {
	c := config.Default()
	c.Execution.UseExecutor = false
	if _, err := New(Options{Config: c}); err == nil || !strings.Contains(err.Error(), "never runs agents") {
		t.Fatalf("New with use_executor false: %v", err)
	}
}
