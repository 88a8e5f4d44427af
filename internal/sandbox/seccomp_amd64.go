package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000 // __X32_SYSCALL_BIT
)

// chmodCalls are the mode-changing calls and their mode argument.
var chmodCalls = map[uintptr]int{
	unix.SYS_CHMOD: 1, unix.SYS_FCHMOD: 1, unix.SYS_FCHMODAT: 2, unix.SYS_FCHMODAT2: 2,
}

// chownCalls are the owner-changing calls and their group argument.
var chownCalls = map[uintptr]int{
	unix.SYS_CHOWN: 2, unix.SYS_FCHOWN: 2, unix.SYS_LCHOWN: 2, unix.SYS_FCHOWNAT: 3,
}
