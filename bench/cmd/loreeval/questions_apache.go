package main

// apache are questions about apache2-doc (the Apache HTTP Server 2.4
// manual), written as a site owner would ask them.
var apache = []question{
	{"How do I send visitors from an old URL to a new one?", "mod/mod_alias.html rewrite/remapping.html", "Redirect Directive"},
	{"How can I host two websites with different domain names on one server?", "vhosts/name-based.html vhosts/examples.html", "Using Name-based Virtual Hosts"},
	{"How do I password protect a directory?", "howto/auth.html mod/mod_auth_basic.html", "Getting it working"},
	{"How do I create the user file for basic authentication?", "programs/htpasswd.html howto/auth.html", "Examples"},
	{"How do I enable HTTPS with my certificate and key?", "ssl/ssl_howto.html mod/mod_ssl.html", "Basic Configuration Example"},
	{"How do I turn on gzip compression of responses?", "mod/mod_deflate.html", "Enabling Compression"},
	{"How can I make browsers cache images for a month?", "mod/mod_expires.html", "ExpiresByType Directive"},
	{"How do I set up Apache as a reverse proxy in front of an application server?", "howto/reverse_proxy.html mod/mod_proxy.html", "Simple reverse proxying"},
	{"How do I spread requests across several backend servers?", "mod/mod_proxy_balancer.html howto/reverse_proxy.html", "Examples of a balancer configuration"},
	{"How do I restart Apache without dropping current connections?", "stopping.html programs/apachectl.html", "Graceful Restart"},
	{"How can I benchmark how many requests per second my server handles?", "programs/ab.html", "Synopsis"},
	{"How do I rotate the log files every day?", "programs/rotatelogs.html logs.html", "Examples"},
	{"How do I change the format of the access log?", "mod/mod_log_config.html logs.html", "Custom Log Formats"},
	{"How do I show a custom page for 404 errors?", "custom-error.html mod/core.html", "Configuration"},
	{"How can users publish web pages from their home directory?", "howto/public_html.html mod/mod_userdir.html", "Setting the file path with UserDir"},
	{"How do I allow access only from certain IP addresses?", "howto/access.html mod/mod_authz_host.html", "Access control by host"},
	{"How do I run CGI scripts?", "howto/cgi.html mod/mod_cgi.html", "Configuring httpd to permit CGI"},
	{"How do I rewrite URLs with a regular expression?", "rewrite/intro.html mod/mod_rewrite.html rewrite/remapping.html", "RewriteRule Basics"},
	{"What do the flags in brackets at the end of a RewriteRule mean?", "rewrite/flags.html", "Introduction"},
	{"How do I add or remove an HTTP response header?", "mod/mod_headers.html", "Header Directive"},
	{"How do I get a list of the files in a directory that has no index.html?", "mod/mod_autoindex.html mod/mod_dir.html", "Summary"},
	{"How do I see a live page of what the server and its workers are doing?", "mod/mod_status.html", "Enabling Status Support"},
	{"How can I enable HTTP/2?", "howto/http2.html mod/mod_http2.html", "Basic Configuration"},
	{"Get certificates from Let's Encrypt automatically", "mod/mod_md.html", "Summary"},
	{"What does MaxRequestWorkers control?", "mod/mpm_common.html", "MaxRequestWorkers Directive"},
	{"How do I limit the bandwidth of a download?", "mod/mod_ratelimit.html", "Summary"},
	{"How do I include a common footer in every page with server side includes?", "howto/ssi.html mod/mod_include.html", "Including a standard footer"},
	{"Why are my .htaccess files ignored?", "howto/htaccess.html mod/core.html", "Troubleshooting"},
	{"How do I log the client's real IP address when Apache sits behind a load balancer?", "mod/mod_remoteip.html", "RemoteIPHeader Directive"},
	{"How do I protect the server from slow clients that hold connections open?", "mod/mod_reqtimeout.html", "RequestReadTimeout Directive"},
	{"How do I pass PHP requests to PHP-FPM over FastCGI?", "mod/mod_proxy_fcgi.html", "Examples"},
	{"How do I proxy WebSocket connections?", "mod/mod_proxy_wstunnel.html mod/mod_proxy_http.html mod/mod_proxy.html", "Summary"},
	{"How do I check my configuration files for syntax errors?", "programs/apachectl.html programs/httpd.html configuring.html", "Options"},
	{"How do I load a module when the server starts?", "mod/mod_so.html dso.html", "LoadModule Directive"},
	{"How do I serve a page in the language the browser prefers?", "content-negotiation.html mod/mod_negotiation.html", "Negotiation in httpd"},
}

// apacheParaphrase asks for the same kind of thing without the words of
// the page's title, file name or the directive's or section's name.
var apacheParaphrase = []question{
	{"A page moved to a new address; how do I make the old link send people to the new location?", "mod/mod_alias.html rewrite/remapping.html", "Redirect Directive"},
	{"Two domains point at my one machine; how do I give each its own website?", "vhosts/name-based.html vhosts/examples.html", "Using Name-based Virtual Hosts"},
	{"How do I make a folder ask for a login and password before showing anything?", "howto/auth.html mod/mod_auth_basic.html", "Getting it working"},
	{"Which command builds the list of usernames and hashed secrets that a login prompt checks?", "programs/htpasswd.html", "Examples"},
	{"How do I get the padlock in the browser for my site, using my certificate and private key?", "ssl/ssl_howto.html mod/mod_ssl.html", "Basic Configuration Example"},
	{"How can I make pages smaller on the wire so they download faster?", "mod/mod_deflate.html", "Enabling Compression"},
	{"How do I tell browsers to keep images for a month before asking again?", "mod/mod_expires.html", "ExpiresByType Directive"},
	{"I run an app on port 8080; how do I put the web server in front of it so people reach it on port 80?", "howto/reverse_proxy.html mod/mod_proxy.html", "Simple reverse proxying"},
	{"How do I share incoming traffic among several copies of my backend?", "mod/mod_proxy_balancer.html howto/reverse_proxy.html", "Examples of a balancer configuration"},
	{"How do I reload the settings without cutting off people who are downloading right now?", "stopping.html", "Graceful Restart"},
	{"How can I measure how many hits a second my site can take?", "programs/ab.html", "Synopsis"},
	{"How do I start a fresh record of requests every night so one file does not grow forever?", "programs/rotatelogs.html", "Examples"},
	{"How can I choose which details of each request get written down, like the referring page and the browser?", "mod/mod_log_config.html logs.html", "Custom Log Formats"},
	{"When a page isn't there, how do I show my own friendly page instead of the default message?", "custom-error.html mod/core.html", "Configuration"},
	{"How can each account on the machine have its own pages under /~name?", "howto/public_html.html mod/mod_userdir.html", "Setting the file path with UserDir"},
	{"How do I let in only visitors from our office network and block everyone else?", "howto/access.html mod/mod_authz_host.html", "Access control by host"},
	{"How do I make a Perl program run on each request and send back what it prints as the page?", "howto/cgi.html mod/mod_cgi.html", "Configuring httpd to permit CGI"},
	{"How do I change /product/42 into /item.php?id=42 behind the scenes, with a pattern?", "rewrite/intro.html mod/mod_rewrite.html rewrite/remapping.html", "Regular Expressions"},
	{"What do letters like [L,R=301] after a pattern mean?", "rewrite/flags.html", "Introduction"},
	{"How can I attach an extra field like X-Frame-Options to every reply?", "mod/mod_headers.html", "Header Directive"},
	{"When a folder has no start page, how do I make it show what files it holds?", "mod/mod_autoindex.html", "Summary"},
	{"Where can I watch in real time what each worker is busy with?", "mod/mod_status.html", "Enabling Status Support"},
	{"How can the web server obtain and renew free certificates from Let's Encrypt by itself?", "mod/mod_md.html", "Summary"},
	{"How do I cap the download speed each client gets?", "mod/mod_ratelimit.html", "Summary"},
	{"Behind a load balancer every line shows the balancer's address; how do I record the visitor's own address?", "mod/mod_remoteip.html", "Remote IP Processing"},
	{"How do I drop clients that trickle in their data too slowly and tie up connections?", "mod/mod_reqtimeout.html", "RequestReadTimeout Directive"},
	{"How do I hand .php files to a separate FPM pool?", "mod/mod_proxy_fcgi.html", "Examples"},
	{"Before reloading, how can I find out whether my settings have a typo?", "programs/apachectl.html programs/httpd.html configuring.html", "Options"},
	{"How do I show the French version of a page to visitors whose browser prefers French?", "content-negotiation.html mod/mod_negotiation.html", "Negotiation in httpd"},
}

var offTopicApache = []question{
	{q: "How do I bake sourdough bread at home?"},
	{q: "What is the capital of Australia?"},
	{q: "How should I train for my first marathon?"},
	{q: "Which houseplants survive in low light?"},
	{q: "What year did the Berlin Wall fall?"},
	{q: "How do I get a red wine stain out of a carpet?"},
	{q: "What is a good chord progression for a beginner on guitar?"},
	{q: "How do I renew my passport?"},
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
