package identity

import (
	"context"
	"errors"
)

// Names looks up the account a user name has now; *Resolver is one.
type Names interface {
	LookupName(ctx context.Context, name string) (User, error)
}

var _ Names = (*Resolver)(nil)

// NoUID is the owner of data whose account is not known: written before
// uids were recorded and adopted when no account had the name. It
// matches no account, so only admins see such data.
const NoUID int64 = -1

// Adoption is what Adopt did, by user name.
type Adoption struct {
	Adopted  map[string]uint32 // the name's account now owns its data
	Orphaned []string          // no account has the name: NoUID, kept for admins
	Pending  map[string]error  // the user database did not answer: tried again next time
}

// Adopt gives the data stored under each of names before uids were
// recorded (the previous version's) the uid the name has now: give is
// called with that uid, or with NoUID for good when no account has the
// name, so that an account made later with it inherits nothing. A name
// the user database cannot answer for is left to a later call. The store
// and the credential store both adopt this way.
func Adopt(ctx context.Context, accounts Names, names []string, give func(name string, uid int64) error) (Adoption, error) {
	a := Adoption{Adopted: map[string]uint32{}, Pending: map[string]error{}}
	for _, name := range names {
		uid := NoUID
		u, err := accounts.LookupName(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			a.Orphaned = append(a.Orphaned, name)
		case err != nil:
			a.Pending[name] = err
			continue
		default:
			uid = int64(u.UID)
			a.Adopted[name] = u.UID
		}
		if err := give(name, uid); err != nil {
			return a, err
		}
	}
	return a, nil
}
