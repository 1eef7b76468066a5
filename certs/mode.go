package certs

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Mode says where the webhook serving certificate comes from.
type Mode string

const (
	// ModeSelfSigned: the operator issues and rotates its own CA and
	// serving certificate (clusters without cert-manager).
	ModeSelfSigned Mode = "self-signed"
	// ModeCertManager: cert-manager issues the certificate and injects the CA.
	ModeCertManager Mode = "cert-manager"
	// ModeFiles: serve the certificate mounted in the certificate directory.
	ModeFiles Mode = "files"
)

// Modes lists the valid modes in the order the flag help shows them.
var Modes = []Mode{ModeSelfSigned, ModeCertManager, ModeFiles}

// ParseMode validates a --cert-mode value.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown certificate mode %q: use one of %s", s, joinModes())
}

func joinModes() string {
	parts := make([]string, len(Modes))
	for i, m := range Modes {
		parts[i] = string(m)
	}
	return strings.Join(parts, ", ")
}

// ParseTLSVersion turns "1.2" or "1.3" (also "VersionTLS12"/"VersionTLS13")
// into a crypto/tls version. Versions below 1.2 are refused: the API server
// does not need them and they are broken.
func ParseTLSVersion(s string) (uint16, error) {
	switch strings.TrimSpace(s) {
	case "1.2", "VersionTLS12", "TLS12":
		return tls.VersionTLS12, nil
	case "1.3", "VersionTLS13", "TLS13":
		return tls.VersionTLS13, nil
	case "1.0", "1.1", "VersionTLS10", "VersionTLS11":
		return 0, fmt.Errorf("TLS version %q is too old: the webhook server needs at least 1.2", s)
	}
	return 0, fmt.Errorf("unknown TLS version %q: use 1.2 or 1.3", s)
}

// TLSOptions returns the webhook server's TLS settings: the minimum version,
// HTTP/1.1 only unless enableHTTP2 (HTTP/2 rapid-reset and stream-exhaustion
// attacks, CVE-2023-44487 and CVE-2023-39325, make it opt-in), and the
// certificate from getCertificate when it is not nil.
func TLSOptions(minVersion uint16, enableHTTP2 bool, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) []func(*tls.Config) {
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = minVersion
		if enableHTTP2 {
			c.NextProtos = []string{"h2", "http/1.1"}
		} else {
			c.NextProtos = []string{"http/1.1"}
		}
		if getCertificate != nil {
			c.GetCertificate = getCertificate
		}
	}}
}
