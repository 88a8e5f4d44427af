// Command demomodel serves a stand-in of the Anthropic Messages API on
// 127.0.0.1 for the make run demo (there is no model API to reach from
// here): one turn in which the model runs a shell command through Claude
// Code's Bash tool and then answers. It prints its URL and serves until
// killed.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agor-sh/agor/internal/agent/modeltest"
)

func main() {
	srv := modeltest.ServeAnthropic(modeltest.AnthTurn{
		Bash: "echo 'written by the agent as '$(id -un) > agent-demo.txt; cat agent-demo.txt",
		Text: "Done: agent-demo.txt is in your home directory.",
	})
	defer srv.Close()
	fmt.Println(srv.URL)
	_ = os.Stdout.Sync()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}
