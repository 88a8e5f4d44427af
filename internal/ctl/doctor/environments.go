package doctor

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agor-sh/agor/internal/envdef"
)

// --- environments ----------------------------------------------------------------

// executorBinary is where the packaged executor is; every environment's
// unit binds it into the root at the same path.
const executorBinary = "/usr/libexec/agor/agor-executor"

// checkEnvironments checks each environment defined: its root is there,
// its units are written, and the executor binary can start inside it
// (static, or its ELF interpreter is in the root); and that
// environments.default names one of them.
func checkEnvironments(_ context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	defs, err := envdef.List(d.path(d.cfg.Environments.Dir))
	if err != nil {
		return fail("fix or remove the definition (agorctl environments remove NAME)", "%v", err)
	}
	if def := d.cfg.Environments.Default; def != "" && def != envdef.Host && !defined(defs, def) {
		return fail("agorctl environments add "+def+" --root ..., or change environments.default",
			"environments.default is %s, which is not defined in %s", def, d.cfg.Environments.Dir)
	}
	if len(defs) == 0 {
		return ok("none defined (in %s)", d.cfg.Environments.Dir)
	}
	var good, bad []string
	for _, def := range defs {
		if p := d.envProblem(def); p != "" {
			bad = append(bad, def.Name+": "+p)
			continue
		}
		good = append(good, def.Name)
	}
	if len(bad) > 0 {
		return fail("agorctl environments add NAME --root ... again (it rewrites the units), then systemctl daemon-reload",
			"%s", strings.Join(bad, "; "))
	}
	return ok("%s: root, units and executor in place", strings.Join(good, ", "))
}

func defined(defs []envdef.Definition, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// envProblem is what keeps def's executor from starting, "" when nothing.
func (d *Doctor) envProblem(def envdef.Definition) string {
	if def.Root != "" {
		if fi, err := os.Stat(d.path(def.Root)); err != nil || !fi.IsDir() {
			return fmt.Sprintf("root %s is not a directory", def.Root)
		}
	} else if fi, err := os.Stat(d.path(def.Image)); err != nil || !fi.Mode().IsRegular() {
		return fmt.Sprintf("image %s is not a file", def.Image)
	}
	for _, kind := range []string{"socket", "service"} {
		u := "agor-env-" + def.Name + "@." + kind
		if !d.anyExists(unitDirs[:1], u) {
			return "unit " + u + " is missing"
		}
	}
	if def.Root == "" {
		return "" // an image is mounted by systemd only: not looked into here
	}
	return d.startsIn(def.Root)
}

// startsIn says why the executor binary could not start in root, "" if
// it can: a static binary runs anywhere, a dynamic one needs its
// interpreter (and libc) from the root.
func (d *Doctor) startsIn(root string) string {
	f, err := elf.Open(d.path(executorBinary))
	if err != nil {
		return fmt.Sprintf("executor %s: %v", executorBinary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		buf := make([]byte, p.Filesz)
		if _, err := p.ReadAt(buf, 0); err != nil {
			return fmt.Sprintf("executor %s: %v", executorBinary, err)
		}
		interp := strings.TrimRight(string(buf), "\x00")
		if _, err := os.Stat(d.path(filepath.Join(root, interp))); err != nil {
			return fmt.Sprintf("the executor is linked dynamically and %s has no %s", root, interp)
		}
	}
	return ""
}
