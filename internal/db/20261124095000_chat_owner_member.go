package db

// chat_sessions gain owner_member_hash: the SHA-256 of the strong member id
// (an unguessable visitor id, api/chat_owner.go) a session was opened with
// through the client API, which owns the session as its owner secret does.
// Sessions stored before, messenger sessions and sessions of weak member ids
// have none (”).
func init() {
	migrations.MustRegister(addingColumns("chat_sessions", [2]string{"owner_member_hash", "TEXT NOT NULL DEFAULT ''"}), nil)
}
