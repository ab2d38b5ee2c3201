// Package api is the local API of the daemon: HTTP/JSON over the unix socket
// R/run/daemon.sock (mode 0600, owned by root). It holds the request and
// response types and the Client the CLIs use; the daemon serves it.
package api
