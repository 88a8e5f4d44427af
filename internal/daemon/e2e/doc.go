// Package e2e holds the daemon's end-to-end tests: the daemon booted
// whole (daemon.New, then Run) in the test process with the direct
// backend, real agor-executor processes (built once per test binary by
// exectest) on private sockets, the real agent CLIs against stand-in
// model servers, and clients on its API socket; TestFloodLoad and
// BenchmarkFlood run cmd/agor-daemon as a process of its own.
//
// Run them as root, as make test does (make bench runs the benchmarks):
//
//	go test -race ./internal/daemon/e2e
//	go test -run '^$' -bench Terminal -benchtime 5x ./internal/daemon/e2e
//
// Under root the executors run as the test account agortest, which
// test/deps.sh makes (test/testaccount.sh), and the tests that act for
// other uids, mount a tmpfs or start two people's executors run; as
// anyone else those skip and the executors run as the caller. The agent
// tests need the four CLIs test/agents.sh installs (or AGOR_AGENT_*
// naming other copies); the sandbox tests need Landlock.
//
// The package has no code of its own. The harness is harness_test.go
// (the daemon, its client), harness_prompt_test.go (prompts, agents and
// their streams), harness_terminal_test.go (a terminal's NDJSON stream)
// and harness_as_test.go (requests from another uid); each other file
// tests one concern.
package e2e
