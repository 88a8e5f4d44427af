// Package polkit holds no code: 50-agor.rules is the polkit rule the
// packages install, and rule_test.go runs its logic under Node.js against
// the unit names the daemon writes. The real polkitd judges it in the
// real-systemd suite.
package polkit
