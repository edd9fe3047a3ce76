// Package transport moves the opaque payloads of IMPALA-style training
// between actors and the learner: trajectory segments from actors to the
// learner, versioned parameters from the learner to the actors, and actor
// statistics. It knows nothing about PPO; the rl package encodes the
// payloads.
//
// Two implementations share small interfaces (SegmentSink, ParamsSource,
// SegmentSource, ParamsSink, ActorTransport, LearnerTransport):
//
//   - NATS (Actor, Learner over a Conn from Dial): subjects
//     tegrl.<run>.traj, tegrl.<run>.params and tegrl.<run>.stats; every
//     message is a Frame (magic, format version, kind, run id, policy
//     version, actor id, per-actor sequence number, payload length, CRC-32C
//     of the payload). Parameters too large for one message go through a
//     JetStream object store with a small pointer frame; the newest
//     parameters are kept in a JetStream key-value bucket for actors that
//     connect late. StartServer runs an embedded NATS server with JetStream.
//   - In-process channels (ChanLearner, ChanActor), with the same checks and
//     counters, to compare against NATS within one run.
//
// The payload of every parameter frame is an envelope (DecodeEnvelope)
// that carries an ed25519 signature of the run id, the version and the
// SHA-256 of the parameters when the learner has a signing key
// (LearnerConfig.SigningKey); actors given its public key
// (ActorConfig.TrustKey) drop, and count, parameters that are unsigned or
// whose signature does not verify. Policy files are signed whole, in a
// sidecar NAME.sig (SignPolicy, VerifyPolicy).
//
// The learner drops, and counts, everything it cannot use: undecodable
// messages, bad checksums, other runs, segments older than its lag bound, a
// full queue; it detects lost segments from per-actor sequence gaps. Actors
// never block on parameters: LatestParams returns the newest ones received.
package transport
