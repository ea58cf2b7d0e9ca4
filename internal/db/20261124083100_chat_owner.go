package db

// chat_sessions gain owner_hash: the SHA-256 of the owner secret of a session
// opened through the client API, required to read or delete it. Sessions
// stored before have none (”) and, like messenger sessions, are no longer
// readable through the client API (the admin API still shows them).
func init() {
	migrations.MustRegister(addingColumns("chat_sessions", [2]string{"owner_hash", "TEXT NOT NULL DEFAULT ''"}), nil)
}
