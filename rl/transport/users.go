package transport

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// Role is what a NATS user may do.
type Role string

// Roles of NATS users.
const (
	// RoleLearner may do everything: publish parameters, create and write
	// the JetStream buckets, read segments.
	RoleLearner Role = "learner"
	// RoleActor may publish segments and statistics, subscribe to
	// parameters and read the parameter buckets; it may not publish
	// parameters, write the key-value or object stores, or create, change
	// or delete streams.
	RoleActor Role = "actor"
)

// User is a NATS user of the server (ServerConfig.Users).
type User struct {
	Name     string
	Password string
	Role     Role
	// Run limits an actor to one run's subjects; "" means every run.
	Run string
}

// ErrBadCredentials is wrapped by the errors of ReadCredentials and of
// invalid users.
var ErrBadCredentials = errors.New("bad NATS credentials")

// permissions are the server permissions of a user of role r.
func (u User) permissions() (*server.Permissions, error) {
	run := u.Run
	if run == "" {
		run = "*"
	} else if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	switch u.Role {
	case RoleLearner:
		return nil, nil // no restriction
	case RoleActor:
		sub := SubjectsFor(run)
		return &server.Permissions{
			Publish: &server.SubjectPermission{
				Allow: []string{sub.Traj, sub.Stats,
					// JetStream reads: stream info, direct and message gets,
					// the ordered consumers of object gets and their flow
					// control replies.
					"$JS.API.>", "$JS.FC.>", "_INBOX.>"},
				Deny: []string{sub.Params, "$KV.>", "$O.>",
					"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.DELETE.>",
					"$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>", "$JS.API.STREAM.SNAPSHOT.>",
					"$JS.API.STREAM.RESTORE.>", "$JS.API.STREAM.PEER.>", "$JS.API.STREAM.LEADER.>", "$JS.API.META.>"},
			},
			Subscribe: &server.SubjectPermission{Allow: []string{sub.Params, "_INBOX.>"}},
		}, nil
	}
	return nil, fmt.Errorf("%w: user %q: role %q, want %s or %s", ErrBadCredentials, u.Name, u.Role, RoleLearner, RoleActor)
}

// serverUsers converts users for the server's options.
func serverUsers(users []User) ([]*server.User, error) {
	seen := map[string]bool{}
	out := make([]*server.User, 0, len(users))
	for _, u := range users {
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("%w: user %q without a name or password", ErrBadCredentials, u.Name)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("%w: user %q twice", ErrBadCredentials, u.Name)
		}
		seen[u.Name] = true
		p, err := u.permissions()
		if err != nil {
			return nil, err
		}
		out = append(out, &server.User{Username: u.Name, Password: u.Password, Permissions: p})
	}
	return out, nil
}

// NewPassword returns a random password: 32 bytes from crypto/rand in hex.
func NewPassword() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("transport: password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// RunUsers returns a learner and an actor user for run with fresh random
// passwords, named tegrl-learner and tegrl-actor.
func RunUsers(run string) (learner, actor User, err error) {
	lp, err := NewPassword()
	if err != nil {
		return User{}, User{}, err
	}
	ap, err := NewPassword()
	if err != nil {
		return User{}, User{}, err
	}
	return User{Name: "tegrl-learner", Password: lp, Role: RoleLearner, Run: run},
		User{Name: "tegrl-actor", Password: ap, Role: RoleActor, Run: run}, nil
}

// FormatCredentials is the content of a credentials file: NAME:PASSWORD
// and a newline.
func FormatCredentials(name, password string) []byte {
	return []byte(name + ":" + password + "\n")
}

// ParseCredentials reads NAME:PASSWORD (one line, an optional final
// newline; the name without a colon). Errors wrap ErrBadCredentials.
func ParseCredentials(b []byte) (name, password string, err error) {
	line := strings.TrimSuffix(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	name, password, ok := strings.Cut(line, ":")
	if !ok || name == "" || password == "" || strings.ContainsAny(line, "\r\n") {
		return "", "", fmt.Errorf("%w: want one line NAME:PASSWORD", ErrBadCredentials)
	}
	return name, password, nil
}

// ReadCredentials reads a credentials file (ParseCredentials).
func ReadCredentials(path string) (name, password string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("transport: credentials: %w", err)
	}
	name, password, err = ParseCredentials(b)
	if err != nil {
		return "", "", fmt.Errorf("transport: credentials %s: %w", path, err)
	}
	return name, password, nil
}

// ParseUsers reads a users file of the broker: one user a line,
// NAME:PASSWORD:ROLE[:RUN], blank lines and lines starting with # ignored.
// Errors wrap ErrBadCredentials and name the line.
func ParseUsers(b []byte) ([]User, error) {
	var users []User
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("%w: line %d: want NAME:PASSWORD:ROLE[:RUN]", ErrBadCredentials, n)
		}
		u := User{Name: f[0], Password: f[1], Role: Role(f[2])}
		if len(f) == 4 {
			u.Run = f[3]
		}
		if _, err := serverUsers([]User{u}); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		users = append(users, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCredentials, err)
	}
	return users, nil
}
