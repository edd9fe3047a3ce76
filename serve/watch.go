package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tegrl/tegrl/rl/transport"
)

// fileSeen is what the directory watcher remembers of a policy file.
type fileSeen struct {
	size   int64
	mod    time.Time
	stable bool // seen with this size and time on two polls: loaded (or refused)
}

// watchDir polls the policy directory for new or changed *.safetensors
// files. A file is read once it has the same size and modification time
// on two consecutive polls (so that a file being written is not read
// half-way; writing to a temporary name and renaming is better still), and
// loaded into the configured arm, oldest first; each file version is tried
// once.
func (s *Service) watchDir(ctx context.Context) {
	seen := map[string]*fileSeen{}
	t := time.NewTicker(s.cfg.WatchInterval)
	defer t.Stop()
	for {
		s.pollDir(seen)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollDir is one poll of watchDir.
func (s *Service) pollDir(seen map[string]*fileSeen) {
	ents, err := os.ReadDir(s.cfg.PolicyDir)
	if err != nil {
		s.log.Warn("policy directory unreadable", "dir", s.cfg.PolicyDir, "err", err)
		return
	}
	type ready struct {
		path string
		mod  time.Time
	}
	var due []ready
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		path := filepath.Join(s.cfg.PolicyDir, e.Name())
		f := seen[path]
		switch {
		case f == nil || f.size != info.Size() || !f.mod.Equal(info.ModTime()):
			seen[path] = &fileSeen{size: info.Size(), mod: info.ModTime()}
		case !f.stable:
			f.stable = true
			due = append(due, ready{path, info.ModTime()})
		}
	}
	slices.SortFunc(due, func(a, b ready) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	for _, f := range due {
		c, err := readPolicyFile(f.path)
		if err != nil {
			s.log.Warn("policy file unreadable", "path", f.path, "err", err)
			continue
		}
		s.Load(s.cfg.PolicyDirArm, f.path, "dir", c.payload, c.sha256)
	}
}

// watchNATS loads the policy files put into the JetStream object store
// bucket: at start the newest object, then every new one. The object
// store checks each object's SHA-256 digest as it is read; a corrupt one
// is refused with reason checksum. It reconnects and re-watches until ctx
// ends.
func (s *Service) watchNATS(ctx context.Context) {
	nc := s.cfg.NATS
	run := nc.Run
	if run == "" {
		run = "serve"
	}
	for ctx.Err() == nil {
		err := s.watchNATSOnce(ctx, run)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("NATS policy watch stopped; retrying", "url", nc.URL, "bucket", nc.Bucket, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

func (s *Service) watchNATSOnce(ctx context.Context, run string) error {
	nc := s.cfg.NATS
	conn, err := transport.Dial(ctx, transport.DialConfig{URL: nc.URL, Token: nc.Token, User: nc.User, Password: nc.Password, Name: "tegrl-serve", RunID: run, Logger: s.log})
	if err != nil {
		return err
	}
	defer conn.Close()
	js := conn.JetStream()
	obs, err := js.ObjectStore(ctx, nc.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: nc.Bucket,
			Description: "tegrl policy files for tegrl serve", Storage: jetstream.FileStorage})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, nc.Bucket)
		}
	}
	if err != nil {
		return err
	}
	w, err := obs.Watch(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer w.Stop()
	s.log.Info("watching NATS object store for policies", "url", nc.URL, "bucket", nc.Bucket)
	// The watch first lists the objects there (one per name), then a nil
	// marker, then updates: of the initial ones only the newest loads.
	var newest *jetstream.ObjectInfo
	initial := true
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case info, ok := <-w.Updates():
			if !ok {
				return errors.New("object store watch closed")
			}
			switch {
			case info == nil:
				initial = false
				if newest != nil {
					s.loadObject(ctx, obs, newest)
				}
			case info.Deleted, strings.HasSuffix(info.Name, transport.PolicySigSuffix):
				// Signatures load with their policy (loadObject).
			case initial:
				if newest == nil || info.ModTime.After(newest.ModTime) {
					newest = info
				}
			default:
				s.loadObject(ctx, obs, info)
			}
		}
	}
}

// loadObject reads one object and offers it to the configured arm.
func (s *Service) loadObject(ctx context.Context, obs jetstream.ObjectStore, info *jetstream.ObjectInfo) {
	if limit := s.cfg.MaxPolicyBytes; limit > 0 && int64(info.Size) > limit {
		s.refuse(s.natsArm(), "nats", info.Name, reasonSize, fmt.Errorf("%d bytes, more than the limit of %d", info.Size, limit), 0)
		return
	}
	b, err := obs.GetBytes(ctx, info.Name)
	if err != nil {
		if errors.Is(err, jetstream.ErrDigestMismatch) {
			s.refuse(s.natsArm(), "nats", info.Name, reasonChecksum, err, 0)
			return
		}
		s.log.Warn("policy object unreadable", "name", info.Name, "err", err)
		return
	}
	var sidecar []byte
	if s.cfg.TrustKey != nil {
		// NAME.sig, put into the bucket before NAME.
		sidecar, err = obs.GetBytes(ctx, info.Name+transport.PolicySigSuffix)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			sidecar = nil
		} else if err != nil {
			s.log.Warn("policy signature object unreadable", "name", info.Name, "err", err)
			return
		}
	}
	s.load(ctx, s.cfg.NATS.Arm, info.Name, "nats", b, "", sidecar)
}

func (s *Service) natsArm() string {
	if s.cfg.NATS.Arm != "" {
		return s.cfg.NATS.Arm
	}
	return s.router.arms[0].cfg.Name
}
