package db

// documents.parse_meta holds the parser metadata a client may send when it
// creates a document (WIRE §3 DocumentCreate parse_meta): a JSON object as
// text, NULL when none. A database created by this version already has the
// column (the first migration creates the tables from the current models),
// so the column is added only where it is missing. Adding a nullable column
// without a default rewrites no rows on either dialect.
func init() {
	migrations.MustRegister(addingColumns("documents", [2]string{"parse_meta", "TEXT"}), nil)
}
