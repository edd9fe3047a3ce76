package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// Role is what a bearer token allows. A higher role includes the lower
// ones: the admin token may do everything, the write token may read.
type Role int

// The roles.
const (
	// RoleRead asks for decisions: /v1/decide, /v1/allocate, /filter,
	// /prioritize, GET /v1/cluster (and the admin views while the admin
	// role has no token).
	RoleRead Role = iota
	// RoleWrite changes the model: /v1/state, /v1/outcome, the
	// extender's bind, and the pod group plans that filter and
	// prioritize reserve.
	RoleWrite
	// RoleAdmin replaces policies: POST /v1/policies and PUT
	// /v1/allocation-policies/{name}.
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// tokenDigest is a token's SHA-256, so that comparisons take the same time
// whatever the lengths.
type tokenDigest struct {
	set bool
	sum [32]byte
}

func digest(tok string) tokenDigest {
	if tok == "" {
		return tokenDigest{}
	}
	return tokenDigest{set: true, sum: sha256.Sum256([]byte(tok))}
}

// bearerToken extracts the token of an Authorization header: the scheme is
// case-insensitive (RFC 9110 section 11.1), surrounding blanks ignored.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// allowed reports whether the request may act in role: the role is open
// (its token is empty; the admin role is then disabled instead), or the
// request carries the token of the role or of a higher one. The answer
// when not: the status code and message.
func (s *Service) allowed(r *http.Request, role Role) (bool, int, string) {
	// A client certificate verified against the client CA (Config.TLS
	// with RequireAndVerifyClientCert) grants the read and write roles:
	// kube-scheduler's extender client authenticates with one and sends
	// no bearer token.
	if role <= RoleWrite && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true, 0, ""
	}
	if !s.tokens[role].set {
		if role == RoleAdmin {
			return false, http.StatusForbidden, "admin endpoint disabled: the service has no admin token"
		}
		return true, 0, ""
	}
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return false, http.StatusUnauthorized, "missing bearer token (" + role.String() + " role)"
	}
	got := sha256.Sum256([]byte(tok))
	match := 0
	for k := role; k <= RoleAdmin; k++ {
		if s.tokens[k].set {
			match |= subtle.ConstantTimeCompare(got[:], s.tokens[k].sum[:])
		}
	}
	if match != 1 {
		return false, http.StatusUnauthorized, "wrong bearer token for the " + role.String() + " role"
	}
	return true, 0, ""
}

// WithRole wraps h as an API endpoint named name (the handler label of
// the request metrics): callers must hold role's token (or a higher
// role's); the request runs under the service's deadline, with the claim
// protocol of commit (nothing commits after a 503), and a panic answers
// 500 for that request alone.
func (s *Service) WithRole(role Role, name string, h http.HandlerFunc) http.Handler {
	inner := s.bounded(name, h)
	return s.instrument(name, func(w http.ResponseWriter, r *http.Request) {
		if ok, code, msg := s.allowed(r, role); !ok {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tegrl"`)
			}
			s.met.authFailed.WithLabelValues(role.String()).Inc()
			writeJSON(w, code, apiError{Error: msg})
			return
		}
		inner(w, r)
	})
}

// ReadToken reads a token from a file (its first line, surrounding blanks
// trimmed) when path is given, else from the environment variable env;
// both empty: no token.
func ReadToken(path, env string) (string, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		tok := strings.TrimSpace(line)
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", path)
		}
		return tok, nil
	}
	return strings.TrimSpace(os.Getenv(env)), nil
}

// LoadTLS builds the server's TLS configuration from a certificate and key
// (PEM files); with clientCA, clients must present a certificate signed by
// one of its CAs (kube-scheduler's extender config carries one).
func LoadTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("tls: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: client CA %s: no PEM certificate", clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// CheckExposure refuses to serve on addr (host:port) when it is not a
// loopback address and the read or write role has no token (anyone who
// can reach it could redefine the cluster), unless clients must present
// a certificate signed by the client CA, or insecure.
func CheckExposure(addr string, cfg *Config, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if isLoopback(host) || insecure || (cfg.TLS != nil && cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert) {
		return nil
	}
	var open []string
	if cfg.ReadToken == "" {
		open = append(open, "read")
	}
	if cfg.WriteToken == "" {
		open = append(open, "write")
	}
	if len(open) == 0 {
		return nil
	}
	return fmt.Errorf("listen address %s is not loopback and the %s role(s) have no token: anyone who reaches it could decide and redefine the cluster; give tokens (or --insecure to serve openly)",
		addr, strings.Join(open, " and "))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
