// Package netguard keeps outbound calls to configurable endpoints (chat,
// embedding and rerank providers, document processors, data sources) away
// from addresses a tenant must not reach through Lore: cloud metadata,
// link-local and unspecified addresses always, loopback and private ranges
// unless the operator allows them. The check runs twice: on the URL when it is
// configured (CheckURL, a clear 422), and on the resolved address at connect
// time (DialContext), so a name that resolves elsewhere later (DNS
// rebinding) is refused too. One small package, so every client that dials a
// configured endpoint uses the same rules.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("address not allowed")

// metadataHosts are cloud metadata names, refused whatever they resolve to.
var metadataHosts = map[string]bool{
	"metadata.google.internal": true, "metadata.goog": true, "metadata": true,
	"instance-data": true, "instance-data.ec2.internal": true, "metadata.azure.internal": true,
}

// alwaysRefused are ranges no allow-list opens: link-local (the metadata
// services live there), unspecified, multicast, broadcast and the IPv6
// metadata addresses of AWS.
var alwaysRefused = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("ff00::/8"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// internalRanges are refused unless allowed: loopback, private, shared
// (CGNAT), unique-local and other non-public ranges.
var internalRanges = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("192.0.0.0/24"),
}

// Policy is the set of internal destinations the operator allows. The zero
// value allows none.
type Policy struct {
	hosts map[string]bool // "host" or "host:port", lower case
	nets  []netip.Prefix
}

// New builds a policy from allow-list entries: host names, "host:port",
// IP addresses and CIDR ranges (LORE_ALLOWED_PROVIDER_HOSTS, plus the hosts
// of endpoints the operator configured in the environment). Malformed
// entries are returned as an error.
func New(allow []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}}
	for _, e := range allow {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(e); err == nil {
			p.nets = append(p.nets, pfx.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
			p.nets = append(p.nets, netip.PrefixFrom(plain(a), plain(a).BitLen()))
			continue
		}
		if strings.ContainsAny(e, "/ @") {
			return nil, fmt.Errorf("netguard: bad allow-list entry %q (host, host:port, IP or CIDR)", e)
		}
		p.hosts[e] = true
	}
	return p, nil
}

// AllowURLHost adds the host:port of an operator-configured URL (an
// environment endpoint is trusted, only at its own port).
func (p *Policy) AllowURLHost(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return
	}
	p.hosts[strings.ToLower(hostPort(u))] = true
}

// hostPort is the URL's host:port, the port defaulted from the scheme.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// allowedName reports whether host (or host:port) is on the allow-list.
func (p *Policy) allowedName(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return p != nil && (p.hosts[host] || p.hosts[net.JoinHostPort(host, port)])
}

// CheckAddr decides for one resolved address of host:port. A zone
// ("fe80::1%eth0") is dropped first: prefixes never contain a zoned
// address, and the zone does not change which host is reached.
func (p *Policy) CheckAddr(host, port string, a netip.Addr) error {
	a = plain(a)
	for _, pfx := range alwaysRefused {
		if pfx.Contains(a) {
			return fmt.Errorf("%w: %s resolves to %s (link-local, metadata or unspecified)", ErrRefused, host, a)
		}
	}
	internal := false
	for _, pfx := range internalRanges {
		if pfx.Contains(a) {
			internal = true
			break
		}
	}
	if !internal || p.allowedName(host, port) {
		return nil
	}
	if p != nil {
		for _, pfx := range p.nets {
			if pfx.Contains(a) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s resolves to the internal address %s (allow it in LORE_ALLOWED_PROVIDER_HOSTS)", ErrRefused, host, a)
}

// plain is a without its zone and IPv4-mapped prefix: the address the
// ranges are checked against and the one dialled.
func plain(a netip.Addr) netip.Addr { return a.WithZone("").Unmap() }

// CheckURL checks a configured endpoint without resolving it: http(s) only,
// no credentials in the URL, no metadata host names, and literal addresses
// (and "localhost") under the same rules as CheckAddr.
func (p *Policy) CheckURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials (user:password@); send the key in api_key")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	_, port, _ := net.SplitHostPort(hostPort(u))
	if metadataHosts[host] {
		return fmt.Errorf("%w: %s is a cloud metadata service", ErrRefused, host)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, port, a)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return p.CheckAddr(host, port, netip.MustParseAddr("127.0.0.1"))
	}
	return nil
}

// resolver is swapped by tests to simulate DNS rebinding.
var resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
} = net.DefaultResolver

// DialContext resolves addr, checks every address and connects to the first
// one allowed, by address (the name is never resolved a second time).
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if metadataHosts[strings.ToLower(strings.TrimSuffix(host, "."))] {
		return nil, fmt.Errorf("%w: %s is a cloud metadata service", ErrRefused, host)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	var firstErr error
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	for _, a := range addrs {
		if err := p.CheckAddr(host, port, a); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(plain(a).String(), port))
		if err == nil {
			return conn, nil
		}
		firstErr = err
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("netguard: %s has no address", host)
	}
	return nil, firstErr
}

// MaxIdleConnsPerHost bounds the idle connections Client keeps per host.
const MaxIdleConnsPerHost = 256

// Client returns an HTTP client whose every connection goes through
// DialContext: no proxy from the environment (the proxy's address would be
// the one checked) and no redirects (an API endpoint that redirects could
// send the next request elsewhere).
//
// It keeps up to MaxIdleConnsPerHost idle connections per host instead of
// net/http's default of 2: model calls go to one or two hosts, many at once
// (two per chat turn), and with 2 kept every call past the second dialled
// (and, against a real provider, shook hands over TLS) anew.
func (p *Policy) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = p.DialContext
	tr.MaxIdleConns = 4 * MaxIdleConnsPerHost
	tr.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// RedactURL masks the password of credentials embedded in a URL, for views
// and logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "****")
	} else {
		u.User = url.User("****")
	}
	return u.String()
}
