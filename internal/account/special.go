package account

import (
	"errors"
	"fmt"
)

// ErrSpecial is wrapped by every refusal of Special.
var ErrSpecial = errors.New("a special account, not a person's")

// specialNames are accounts that stand for "no one" whatever their uid
// (nfsnobody was 65534 or 4294967294 on older Red Hat systems).
var specialNames = map[string]bool{"nobody": true, "nfsnobody": true, "nogroup": true}

// Special refuses the accounts that no person logs in as, which a uid
// floor (min_uid) does not keep out because their uids are high. The
// ranges are systemd's (docs/UIDS-GIDS.md in systemd's sources):
//
//   - 65534, the overflow uid "nobody": files of unmapped owners carry it,
//     so work run as it could reach them; systemd warns "Special user
//     nobody configured, this is not safe!" and runs it anyway;
//   - 65535 and 4294967295, (uid_t)-1 in 16 and 32 bits: "no uid" to
//     setresuid and chown; 4294967294, nfsnobody's 32-bit overflow uid;
//   - 61184–65519, DynamicUser= accounts: made and reused by systemd for
//     services, never people.
//
// systemd-homed's 60001–60513 are people and pass.
func Special(name string, uid uint32) error {
	who := fmt.Sprintf("uid %d", uid)
	if name != "" {
		who = fmt.Sprintf("%q (uid %d)", name, uid)
	}
	switch {
	case specialNames[name]:
		return fmt.Errorf("%w: %s stands for no one", ErrSpecial, who)
	case uid == 65534 || uid == 4294967294:
		return fmt.Errorf("%w: %s is the overflow uid (nobody)", ErrSpecial, who)
	case uid == 65535 || uid == 4294967295:
		return fmt.Errorf("%w: %s stands for no uid ((uid_t)-1)", ErrSpecial, who)
	case uid >= 61184 && uid <= 65519:
		return fmt.Errorf("%w: %s is in systemd's range for DynamicUser= service accounts (61184-65519)", ErrSpecial, who)
	}
	return nil
}
