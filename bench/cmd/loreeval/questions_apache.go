package main

import (
	_ "embed"
	"fmt"
)

// apacheQuestions are apache2-doc's questions, paraphrases and off-topic
// questions, in the -questions file format.
//
//go:embed apache2-doc.jsonl
var apacheQuestions []byte

// apacheDef is the apache2-doc corpus with its questions.
func apacheDef() corpusDef {
	d := corpusDef{name: "apache2-doc", lang: "English", fetch: apacheCorpus}
	if err := d.parseQuestions("apache2-doc.jsonl", apacheQuestions); err != nil {
		panic(fmt.Sprintf("loreeval: %v", err)) // the embedded file is part of the build
	}
	return d
}

// apacheTitles are the titles of apache2-doc's paraphrase pages as the
// corpus loader gives them, for the paraphrase rule.
var apacheTitles = map[string]string{
	"mod/mod_alias.html": "mod_alias", "rewrite/remapping.html": "Redirecting and Remapping with mod_rewrite",
	"vhosts/name-based.html": "Name-based Virtual Host Support", "vhosts/examples.html": "VirtualHost Examples",
	"howto/auth.html": "Authentication and Authorization", "mod/mod_auth_basic.html": "mod_auth_basic",
	"programs/htpasswd.html": "htpasswd - Manage user files for basic authentication",
	"ssl/ssl_howto.html":     "SSL/TLS Strong Encryption: How-To", "mod/mod_ssl.html": "mod_ssl",
	"mod/mod_deflate.html": "mod_deflate", "mod/mod_expires.html": "mod_expires",
	"howto/reverse_proxy.html": "Reverse Proxy Guide", "mod/mod_proxy.html": "mod_proxy",
	"mod/mod_proxy_balancer.html": "mod_proxy_balancer", "stopping.html": "Stopping and Restarting Apache HTTP Server",
	"programs/ab.html":         "ab - Apache HTTP server benchmarking tool",
	"programs/rotatelogs.html": "rotatelogs - Piped logging program to rotate Apache logs",
	"mod/mod_log_config.html":  "mod_log_config", "logs.html": "Log Files",
	"custom-error.html": "Custom Error Responses", "mod/core.html": "core",
	"howto/public_html.html": "Per-user web directories", "mod/mod_userdir.html": "mod_userdir",
	"howto/access.html": "Access Control", "mod/mod_authz_host.html": "mod_authz_host",
	"howto/cgi.html": "Apache HTTP Server Tutorial: Dynamic Content with CGI", "mod/mod_cgi.html": "mod_cgi",
	"rewrite/intro.html": "Apache mod_rewrite Introduction", "mod/mod_rewrite.html": "mod_rewrite",
	"rewrite/flags.html": "RewriteRule Flags", "mod/mod_headers.html": "mod_headers",
	"mod/mod_autoindex.html": "mod_autoindex", "mod/mod_status.html": "mod_status", "mod/mod_md.html": "mod_md",
	"mod/mod_ratelimit.html": "mod_ratelimit", "mod/mod_remoteip.html": "mod_remoteip",
	"mod/mod_reqtimeout.html": "mod_reqtimeout", "mod/mod_proxy_fcgi.html": "mod_proxy_fcgi",
	"programs/apachectl.html": "apache2ctl - Apache HTTP Server Control Interface",
	"programs/httpd.html":     "httpd - Apache Hypertext Transfer Protocol Server",
	"configuring.html":        "Configuration Files", "content-negotiation.html": "Content Negotiation", "mod/mod_negotiation.html": "mod_negotiation",
}

func init() {
	for rel, title := range apacheTitles {
		pageTitles[rel] = title
	}
}
