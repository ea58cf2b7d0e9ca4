package db

// tenants gain the fields the reference's tenant schema carries (domain,
// logo_url, description, status) and a JSON object of its EE plan fields. A
// database created by this version already has them (the first migration
// creates the tables from the current models), so each column is added only
// where it is missing; none rewrites rows (nullable, or a constant default).
func init() {
	migrations.MustRegister(addingColumns("tenants",
		[2]string{"domain", "TEXT"}, [2]string{"logo_url", "TEXT"}, [2]string{"description", "TEXT"},
		[2]string{"status", "TEXT NOT NULL DEFAULT 'active'"}, [2]string{"plan", "TEXT NOT NULL DEFAULT '{}'"}), nil)
}
