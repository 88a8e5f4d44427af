package envdef

import "strings"

// An executor key names one executor of the daemon's pool: the account
// alone for the host, "ACCOUNT:ENV" for an environment. ':' is in no
// valid user name (account.ValidName) nor environment name, so a key
// splits one way only.
const keySep = ":"

// Key is account's executor key in env ("" : the host).
func Key(account, env string) string {
	if env == "" {
		return account
	}
	return account + keySep + env
}

// SplitKey is Key's inverse.
func SplitKey(key string) (account, env string) {
	account, env, _ = strings.Cut(key, keySep)
	return account, env
}
