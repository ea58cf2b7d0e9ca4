package api

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// trustedProxies parses LORE_TRUSTED_PROXIES (IPs and CIDRs); entries that
// are neither are logged and skipped.
func trustedProxies(entries []string, log *slog.Logger) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, netip.PrefixFrom(p.Addr().WithZone("").Unmap(), unmappedBits(p)).Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			a = a.WithZone("").Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if log != nil {
			log.Error("LORE_TRUSTED_PROXIES: entry ignored (not an IP or CIDR)", "entry", e)
		}
	}
	return out
}

// unmappedBits is the prefix length of p once its address is unmapped
// (::ffff:10.0.0.0/104 is 10.0.0.0/8).
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(p.Bits()-96, 0)
	}
	return p.Bits()
}

// trusted reports whether a is one of the trusted proxies.
func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the address of the client a request comes from, the key of
// every per-IP limit and the IP that is recorded. It is the peer address,
// unless the peer is a trusted proxy: then X-Forwarded-For (every header
// line, each a comma list) is walked from the right, past the trusted
// proxies, and the first other address is the client's. The entries left
// of it are whatever the client sent and are never believed. An entry that
// is not an IP stops the walk, and so does a header of trusted proxies
// only: the peer is the answer then.
func (s *Server) clientIP(c *fiber.Ctx) string {
	peer := netip.Addr{}
	if ip := c.Context().RemoteIP(); ip != nil {
		peer, _ = netip.AddrFromSlice(ip)
		peer = peer.Unmap()
	}
	if !peer.IsValid() {
		return c.Context().RemoteIP().String()
	}
	if len(s.proxies) == 0 || !s.trusted(peer) {
		return peer.String()
	}
	values := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for len(v) > 0 {
			var entry []byte
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				entry, v = v, nil
			}
			a, err := netip.ParseAddr(string(bytes.TrimSpace(entry)))
			if err != nil {
				return peer.String()
			}
			if a = a.WithZone("").Unmap(); !s.trusted(a) {
				return a.String()
			}
		}
	}
	return peer.String()
}
