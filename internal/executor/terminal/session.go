package terminal

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// signalSession sends sig to every process group of session sid: the
// shell's own, and those job control made for its background jobs.
func signalSession(sid int, sig syscall.Signal) {
	_ = syscall.Kill(-sid, sig)
	for _, pgid := range sessionGroups(sid) {
		if pgid != sid {
			_ = syscall.Kill(-pgid, sig)
		}
	}
}

// sessionGroups lists the process groups of session sid, from /proc.
func sessionGroups(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	seen := map[int]bool{}
	var out []int
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pgid, s, ok := groupOf(e.Name())
		if ok && s == sid && !seen[pgid] {
			seen[pgid] = true
			out = append(out, pgid)
		}
	}
	return out
}

// groupOf reads a process's group and session from /proc/PID/stat:
// after the parenthesised name come state, ppid, pgrp, session.
func groupOf(pid string) (pgid, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, 0, false
	}
	pgid, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	return pgid, sid, err1 == nil && err2 == nil
}
