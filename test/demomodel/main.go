// Command demomodel serves a stand-in of the Anthropic Messages API on
// 127.0.0.1 where there is no model API to reach (the make run demo, the
// real-systemd suite): one turn in which the model runs a shell command
// through Claude Code's Bash tool and then answers (then -plain text-only
// turns, for follow-up prompts). It prints its URL and serves until killed.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

func main() {
	bash := flag.String("bash", "echo 'written by the agent as '$(id -un) > agent-demo.txt; cat agent-demo.txt", "the command the model asks the Bash tool to run")
	text := flag.String("text", "Done: agent-demo.txt is in your home directory.", "the model's answer after the command")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on (loopback)")
	plain := flag.Int("plain", 0, "answer this many further turns (follow-up prompts) with text only")
	flag.Parse()
	script := []modeltest.AnthTurn{{Bash: *bash, Text: *text}}
	for i := range *plain {
		script = append(script, modeltest.AnthTurn{Text: fmt.Sprintf("Noted (follow-up %d).", i+1)})
	}
	srv := modeltest.ServeAnthropic(script...)
	defer srv.Close()
	url := srv.URL
	if *listen != "127.0.0.1:0" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demomodel:", err)
			os.Exit(1)
		}
		go func() { _ = http.Serve(ln, srv.Config.Handler) }()
		url = "http://" + ln.Addr().String()
	}
	fmt.Println(url)
	_ = os.Stdout.Sync()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}
