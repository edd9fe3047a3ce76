package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func startUsersServer(t *testing.T, run string) (*Server, User, User) {
	t.Helper()
	lu, au, err := RunUsers(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(lu.Password) != 64 || lu.Password == au.Password {
		t.Fatalf("passwords %q %q", lu.Password, au.Password)
	}
	s, err := StartServer(ServerConfig{Users: []User{lu, au}, MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s, lu, au
}

func dialUser(t *testing.T, s *Server, run string, u User, pipe bool) *Conn {
	t.Helper()
	cfg := DialConfig{URL: s.ClientURL(), User: u.Name, Password: u.Password, Name: u.Name, RunID: run}
	if pipe {
		cfg.InProcess = s
	}
	return dialTestConfig(t, cfg)
}

// TestActorCannotPublishParams: with per-role users, an actor's
// credentials carry a whole run (segments out; parameters in, directly
// and through the object store), but the server refuses the actor's
// publish on the parameter subject (reported asynchronously, counted in
// ConnStats.PermissionErrors) and its writes to the JetStream buckets.
func TestActorCannotPublishParams(t *testing.T) {
	for _, pipe := range []bool{false, true} {
		t.Run(fmt.Sprint("pipe=", pipe), func(t *testing.T) {
			run := "perm"
			s, lu, au := startUsersServer(t, run)
			lc := dialUser(t, s, run, lu, pipe)
			l := newTestLearner(t, lc, LearnerConfig{QueueSize: 64})
			ac := dialUser(t, s, run, au, pipe)
			a := newTestActor(t, ac, 1)
			for i := range 3 {
				if err := a.PublishSegment(0, segPayload(1, i)); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				recvFrame(t, l.Segments())
			}
			big := bytes.Repeat([]byte("p"), 2<<20)
			if err := l.PublishParams(1, big); err != nil { // via the object store
				t.Fatal(err)
			}
			waitFor(t, "params v1 via the object store", func() bool { v, _, _ := a.LatestParams(); return v == 1 })
			if err := l.PublishParams(2, []byte("weights-v2")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "params v2", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
			// A late actor reads the key-value store.
			if v, _, _ := newTestActor(t, dialUser(t, s, run, au, pipe), 2).LatestParams(); v != 2 {
				t.Errorf("late actor at v%d", v)
			}

			// The actor's credentials publish forged parameters: refused.
			forged := mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: 99, Payload: unsignedEnvelope([]byte("forged"))})
			if err := ac.NATS().Publish(ac.Subjects().Params, forged); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = ac.Flush(ctx)
			waitFor(t, "the permission violation", func() bool { return ac.Stats().PermissionErrors >= 1 })
			if err := ac.NATS().LastError(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("Permissions Violation for Publish to \"tegrl.perm.params\"")) {
				t.Errorf("last error %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			if v, _, _ := a.LatestParams(); v != 2 {
				t.Fatalf("forged parameters arrived: v%d", v)
			}
			if st := a.Stats(); st.ParamsErrors != 0 || st.ParamsIgnored != 0 || st.ParamsReceived != 2 {
				t.Errorf("actor saw the forged message: %+v", st)
			}
			// Nor may it write the buckets, or create or delete streams:
			// each refused request goes unanswered until its deadline, and
			// the learner's connection then finds everything as it was.
			op := func() context.Context {
				c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				t.Cleanup(cancel)
				return c
			}
			kv, err := ac.JetStream().KeyValue(op(), LatestBucket(run))
			if err != nil {
				t.Fatalf("actor cannot even read the key-value bucket: %v", err)
			}
			if _, err := kv.Put(op(), LatestKey, forged); err == nil {
				t.Error("actor wrote the latest parameters")
			}
			if _, err := ac.JetStream().CreateKeyValue(op(), jetstream.KeyValueConfig{Bucket: "intruder"}); err == nil {
				t.Error("actor created a bucket")
			}
			if err := ac.JetStream().DeleteStream(op(), "KV_"+LatestBucket(run)); err == nil {
				t.Error("actor deleted the key-value bucket")
			}
			lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer lcancel()
			if _, err := lc.JetStream().KeyValue(lctx, "intruder"); !errors.Is(err, jetstream.ErrBucketNotFound) {
				t.Errorf("the actor's bucket: %v", err)
			}
			fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer fcancel()
			if v, _, err := newTestActor(t, dialUser(t, s, run, au, pipe), 3).FetchLatestParams(fctx); err != nil || v != 2 {
				t.Errorf("latest parameters after the actor's attempts: v%d %v", v, err)
			}
			if st := lc.Stats(); st.PermissionErrors != 0 {
				t.Errorf("learner refused %d times", st.PermissionErrors)
			}
		})
	}
}

// An actor user limited to one run cannot publish segments to another.
func TestActorUserScopedToRun(t *testing.T) {
	s, _, au := startUsersServer(t, "mine")
	c := dialUser(t, s, "theirs", au, false)
	if err := c.NATS().Publish(SubjectsFor("theirs").Traj, []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Flush(ctx)
	waitFor(t, "the permission violation", func() bool { return c.Stats().PermissionErrors >= 1 })
}

func TestUsersRefused(t *testing.T) {
	s, lu, au := startUsersServer(t, "r")
	for _, pipe := range []bool{false, true} {
		for _, cred := range [][2]string{{lu.Name, au.Password}, {"nobody", lu.Password}, {"", ""}, {au.Name, ""}} {
			cfg := DialConfig{URL: s.ClientURL(), User: cred[0], Password: cred[1], RunID: "r"}
			if pipe {
				cfg.InProcess = s
			}
			c, err := Dial(context.Background(), cfg)
			if !errors.Is(err, ErrUnauthorized) {
				if c != nil {
					c.Close()
				}
				t.Errorf("pipe %v, user %q: %v, want ErrUnauthorized", pipe, cred[0], err)
			}
		}
	}
	// A token is no way in either.
	if c, err := Dial(context.Background(), DialConfig{URL: s.ClientURL(), Token: lu.Password, RunID: "r", InProcess: s}); !errors.Is(err, ErrUnauthorized) {
		if c != nil {
			c.Close()
		}
		t.Errorf("token: %v", err)
	}
	for name, cfg := range map[string]ServerConfig{
		"token and users": {Token: "t", Users: []User{lu}},
		"no password":     {Users: []User{{Name: "a", Role: RoleActor}}},
		"unknown role":    {Users: []User{{Name: "a", Password: "p", Role: "admin"}}},
		"same name twice": {Users: []User{lu, lu}},
		"bad run":         {Users: []User{{Name: "a", Password: "p", Role: RoleActor, Run: "a.b"}}},
	} {
		if s, err := StartServer(cfg); err == nil {
			s.Shutdown()
			t.Errorf("%s: started", name)
		}
	}
}

func TestCredentialsFiles(t *testing.T) {
	n, p, err := ParseCredentials(FormatCredentials("tegrl-actor", "pa:ss"))
	if err != nil || n != "tegrl-actor" || p != "pa:ss" {
		t.Fatalf("round trip: %q %q %v", n, p, err)
	}
	if n, p, err := ParseCredentials([]byte("a:b\r\n")); err != nil || n != "a" || p != "b" {
		t.Errorf("CRLF: %q %q %v", n, p, err)
	}
	for _, b := range []string{"", "\n", "a", ":p", "a:", "a:b\nc:d", "a:b\n\n"} {
		if _, _, err := ParseCredentials([]byte(b)); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%q: %v", b, err)
		}
	}
	users, err := ParseUsers([]byte("# users\nlearner:pw1:learner\n\n actor:pw2:actor:r1 \n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []User{{Name: "learner", Password: "pw1", Role: RoleLearner}, {Name: "actor", Password: "pw2", Role: RoleActor, Run: "r1"}}
	if fmt.Sprint(users) != fmt.Sprint(want) {
		t.Errorf("users %v, want %v", users, want)
	}
	for _, b := range []string{"a:b", "a:b:admin", "a::actor", "a:b:actor:r.1", "a:b:actor:r:x"} {
		if _, err := ParseUsers([]byte(b)); !errors.Is(err, ErrBadCredentials) && !errors.Is(err, ErrBadRunID) {
			t.Errorf("%q: %v", b, err)
		}
	}
}

func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte("tegrl-actor:0123\n"))
	f.Add([]byte("learner:pw:learner\nactor:pw:actor:run\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, p, err := ParseCredentials(b); err == nil {
			if n2, p2, err := ParseCredentials(FormatCredentials(n, p)); err != nil || n2 != n || p2 != p {
				t.Fatalf("round trip of %q:%q: %q:%q %v", n, p, n2, p2, err)
			}
		} else if !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("error %v", err)
		}
		users, err := ParseUsers(b)
		if err != nil {
			return
		}
		if _, err := serverUsers(users[:min(len(users), 1)]); err != nil {
			t.Fatalf("parsed user refused: %v", err)
		}
	})
}

// A server with users logs nothing at warn level when it starts (the
// server's advice against plain-text passwords goes to debug).
func TestUsersServerQuiet(t *testing.T) {
	var buf bytes.Buffer
	lu, au, err := RunUsers("q")
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartServer(ServerConfig{Users: []User{lu, au}, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	if buf.Len() != 0 {
		t.Errorf("server logged at warn:\n%s", buf.String())
	}
}
