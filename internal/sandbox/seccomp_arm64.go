package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0xffffffff // no x32 on arm64: a number no call has
)

// chmodCalls are the mode-changing calls and their mode argument.
var chmodCalls = map[uintptr]int{
	unix.SYS_FCHMOD: 1, unix.SYS_FCHMODAT: 2, unix.SYS_FCHMODAT2: 2,
}

// chownCalls are the owner-changing calls and their group argument
// (arm64 has no chown or lchown: fchownat does both).
var chownCalls = map[uintptr]int{
	unix.SYS_FCHOWN: 2, unix.SYS_FCHOWNAT: 3,
}
