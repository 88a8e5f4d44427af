package store
func crashChild() bool { return false }
