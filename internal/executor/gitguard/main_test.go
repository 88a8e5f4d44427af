package gitguard

import (
	"os"
	"testing"
)

// TestMain gives the tests a HOME of their own: the guard records what
// it disables beneath HOME.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "gitguard-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
